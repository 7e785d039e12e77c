import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing

/// Records the moments it sees into a shared journal.
struct JournalPlugin: Plugin {
    let label: String
    let journal: Journal
    var scope: PluginScope = .universal

    func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        journal.append("\(label).prepare")
        var request = request
        request.headers[HTTPField.Name("X-\(label)")!] = "1"
        return request
    }

    func willSend(_ request: PreparedRequest, context: CallContext) async {
        journal.append("\(label).willSend")
    }

    func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {
        switch result {
        case .success(let response): journal.append("\(label).didReceive \(response.status.code)")
        case .failure(let error): journal.append("\(label).didReceive \(error.status?.code ?? 0)")
        }
    }
}

/// Leash's four moments, expressed as one interceptor.
struct MomentsInterceptor: Interceptor {
    let label: String
    let journal: Journal

    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        journal.append("\(label).execution")
        defer { journal.append("\(label).completion") }
        do {
            let response = try await next(request)
            journal.append("\(label).success \(response.head.status.code)")
            return response
        } catch {
            journal.append("\(label).failure")
            throw error
        }
    }
}

final class Journal: Sendable {
    private let entries = LockedBox<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.current }
}

@Suite struct PluginOrderTests {
    @Test func pluginsAndInterceptorsRunInTheDocumentedOrder() async throws {
        let journal = Journal()
        let stub = StubTransport()
        stub.on(.get, "/a", respond: .status(302, headers: [.location: "/v1/b"]))
        stub.on(.get, "/b", respond: .status(200))
        let client = makeClient(stub) {
            $0.plugins = [JournalPlugin(label: "P1", journal: journal), JournalPlugin(label: "P2", journal: journal)]
            $0.interceptors = [MomentsInterceptor(label: "I1", journal: journal), MomentsInterceptor(label: "I2", journal: journal)]
        }
        try await client.send(Request<Void>.get("/a"))
        #expect(journal.all == [
            "P1.prepare", "P2.prepare",
            "I1.execution", "I2.execution",
            "P1.willSend", "P2.willSend", "P1.willSend", "P2.willSend",
            "I2.success 200", "I2.completion", "I1.success 200", "I1.completion",
            "P1.didReceive 200", "P2.didReceive 200",
        ])
        #expect(stub.recordedRequests.last?.head.headerFields[HTTPField.Name("X-P2")!] == "1")
    }

    @Test func scopedPluginsApplyOnlyToTheirScope() async throws {
        let journal = Journal()
        let stub = StubTransport(fallback: .status(200))
        let client = makeClient(stub) {
            $0.plugins = [JournalPlugin(label: "Users", journal: journal, scope: "users")]
        }
        try await client.send(UserAPI.user(id: 1))
        try await client.send(UserAPI.search("x"))
        let sent = stub.recordedRequests.map { $0.head.headerFields[HTTPField.Name("X-Users")!] }
        #expect(sent == ["1", nil])
    }

    @Test func failureMomentAndDidReceiveSeeTransportErrors() async throws {
        let journal = Journal()
        let stub = StubTransport(fallback: .failure(.transport(TransportFailure(.connectionLost, "reset"))))
        let client = makeClient(stub) {
            $0.plugins = [JournalPlugin(label: "P", journal: journal)]
            $0.interceptors = [MomentsInterceptor(label: "I", journal: journal)]
        }
        await #expect(throws: NetworkError.self) { try await client.send(Request<Void>.get("/x")) }
        #expect(journal.all == ["P.prepare", "I.execution", "P.willSend", "I.failure", "I.completion", "P.didReceive 0"])
    }

    @Test func interceptorCanShortCircuitAndRetry() async throws {
        struct Cached: Interceptor {
            func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
                TransportResponse(head: HTTPResponse(status: .ok), body: ByteStream(data: Data(#"{"id":9,"name":"cached"}"#.utf8)))
            }
        }
        struct RetryOn401: Interceptor {
            func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
                let first = try await next(request)
                guard first.head.status == .unauthorized else { return first }
                var retried = request
                retried.headers[.authorization] = "Bearer fresh"
                return try await next(retried)
            }
        }
        let stub = StubTransport()
        let cached = APIClient(configuration: ClientConfiguration(baseURL: URL(string: "https://api.test")!, interceptors: [Cached()]), transport: stub)
        #expect(try await cached.model(Request<User>.get("/u"), as: User.self).name == "cached")
        #expect(stub.recordedRequests.isEmpty)

        stub.on(.get, "/me", respond: .status(401), .json(#"{"id":1,"name":"me"}"#))
        let refreshing = makeClient(stub) { $0.interceptors = [RetryOn401()] }
        #expect(try await refreshing.model(Request<User>.get("/me"), as: User.self).name == "me")
        #expect(stub.recordedRequests.last?.head.headerFields[.authorization] == "Bearer fresh")
    }
}
