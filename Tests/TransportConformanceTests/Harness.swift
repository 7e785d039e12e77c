import Foundation
import HTTPCore
import Testing
import TestSupport

/// A test server, a transport from the factory, and an `APIClient` over them.
struct Harness {
    let server: TestHTTPServer
    let transport: any Transport
    let client: APIClient

    /// Runs `body` with a fresh server and transport, and shuts both down afterwards.
    static func run(
        _ factory: TransportFactory,
        setup: TransportFactory.Setup = .init(),
        configure: (inout ClientConfiguration) -> Void = { _ in },
        _ body: (Harness) async throws -> Void
    ) async throws {
        let server = try await TestHTTPServer.start()
        let transport = factory.make(setup)
        var configuration = ClientConfiguration(baseURL: server.baseURL, timeout: .hangGuard)
        configure(&configuration)
        let harness = Harness(server: server, transport: transport, client: APIClient(configuration: configuration, transport: transport))
        do {
            try await body(harness)
        } catch {
            try? await factory.shutdown(transport)
            await server.shutdown()
            throw error
        }
        try await factory.shutdown(transport)
        await server.shutdown()
    }

    /// The echo in `response`.
    func echo(_ response: Response<Data>) throws -> EchoResponse {
        try JSONDecoder().decode(EchoResponse.self, from: response.body)
    }
}

/// Expects `body` to fail with `NetworkError.transport` of `kind`, and returns the failure.
@discardableResult
func expectTransportFailure(
    _ kind: TransportFailure.Kind,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> NetworkError? {
    do {
        try await body()
        Issue.record("expected a \(kind) transport failure, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as NetworkError {
        if case .transport(let failure) = error, failure.kind == kind { return error }
        Issue.record("expected a \(kind) transport failure, got \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a NetworkError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Expects `body` to fail with a `NetworkError` that `matches` accepts.
func expectNetworkError(
    _ description: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void,
    matches: (NetworkError) -> Bool
) async {
    do {
        try await body()
        Issue.record("expected \(description), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as NetworkError {
        #expect(matches(error), "expected \(description), got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(description), got \(error)", sourceLocation: sourceLocation)
    }
}
