import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import OpenAPIRuntime
import OpenAPITransport
import Testing
import TestSupport

/// The Courier transports the tests run over. One AsyncHTTPClient transport for the whole
/// target: its event loops are costly to make.
enum Wire: String, CaseIterable, Sendable, CustomStringConvertible {
    case asyncHTTPClient
    case urlSession

    var transport: any Transport {
        switch self {
        case .asyncHTTPClient: sharedAsyncHTTPClient
        case .urlSession: sharedURLSession
        }
    }

    var description: String { rawValue }
}

let sharedAsyncHTTPClient = AsyncHTTPClientTransport()
let sharedURLSession = URLSessionTransport()

/// What a plugin saw of each call: the call's name (the operation id), its scopes, and the
/// request after `prepare`.
final class RecordingPlugin: Plugin {
    struct Seen: Sendable {
        var name: String
        var scopes: Set<PluginScope>
        var head: HTTPRequest
        var status: Int?
    }

    let scope: PluginScope
    private let seen = LockedBox<[Seen]>([])

    init(scope: PluginScope = .universal) { self.scope = scope }

    var calls: [Seen] { seen.current }

    func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        request.headers[HTTPField.Name("X-Prepared-By")!] = "recording-plugin"
        return request
    }

    func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {
        let status = try? result.get().status.code
        seen.withLock { $0.append(Seen(name: context.endpointName, scopes: context.scopes, head: request.head, status: status)) }
    }
}

/// An `APIClient` over `wire` with `configure` applied.
func makeAPIClient(_ wire: Wire, baseURL: URL, configure: (inout ClientConfiguration) -> Void = { _ in }) -> APIClient {
    var configuration = ClientConfiguration(baseURL: baseURL, timeout: .hangGuard)
    configure(&configuration)
    return APIClient(configuration: configuration, transport: wire.transport)
}

/// The generated client at `serverURL` over `transport`.
func makeClient(_ serverURL: URL, transport: any ClientTransport) -> Client {
    Client(serverURL: serverURL, transport: transport)
}

/// One period of the notes server's `/content` route.
let modulo251 = (0..<251).map { UInt8($0) }

/// The bytes of the notes server's `/content` route: byte `i` is `i % 251`.
func contentPattern(_ size: Int) -> Data {
    TestPayload.periodic(modulo251, count: size)
}

/// A single-pass body of `data` in chunks of `chunk` bytes, with no length: sent chunked.
func streamedBody(_ data: Data, chunk: Int = 8 * 1024) -> HTTPBody {
    let chunks = stride(from: 0, to: data.count, by: chunk).map { ArraySlice(data[$0..<min(data.count, $0 + chunk)]) }
    let stream = AsyncStream<ArraySlice<UInt8>> { continuation in
        for piece in chunks { continuation.yield(piece) }
        continuation.finish()
    }
    return HTTPBody(stream, length: .unknown)
}

/// Runs `body` with a fresh notes server, shut down afterwards whether `body` returned or threw.
func withNotesServer(_ body: (NotesServer) async throws -> Void) async throws {
    let server = try await NotesServer.start()
    do {
        try await body(server)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}

/// The `ClientError` that `call` (one generated operation) throws; `nil`, with an issue
/// recorded, when it returns or throws something else.
func clientError(_ call: () async throws -> some Sendable, sourceLocation: SourceLocation = #_sourceLocation) async -> ClientError? {
    do {
        _ = try await call()
        Issue.record("expected a thrown ClientError", sourceLocation: sourceLocation)
    } catch let error as ClientError {
        return error
    } catch {
        Issue.record("expected a ClientError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
