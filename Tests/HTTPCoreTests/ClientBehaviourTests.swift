import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

@Suite struct ClientBehaviourTests {
    @Test func urlIsBuiltFromPartsLikeLeash() async throws {
        let configuration = try ClientConfiguration(scheme: "http", host: "example.test", port: 8080, path: "api")
        #expect(configuration.baseURL.absoluteString == "http://example.test:8080/api")
        #expect(throws: NetworkError.self) { try ClientConfiguration(host: "") }
    }

    @Test func queryIsPercentEncodedPerRFC3986() async throws {
        let stub = StubTransport()
        _ = try? await makeClient(stub).send(UserAPI.search("a+b &c=d/é"))
        #expect(stub.recordedRequests.first?.head.path == "/v1/users?q=a%2Bb%20%26c%3Dd%2F%C3%A9")
    }

    @Test func endpointHeadersReplaceDefaults() async throws {
        let stub = StubTransport()
        stub.on(.get, "/h", respond: .status(200))
        let client = makeClient(stub) { $0.defaultHeaders = [.accept: "application/json", .userAgent: "courier"] }
        try await client.send(Request<Void>.get("/h", headers: [.accept: "text/plain"]))
        let fields = try #require(stub.recordedRequests.first?.head.headerFields)
        #expect(fields[values: .accept] == ["text/plain"])
        #expect(fields[.userAgent] == "courier")
    }

    @Test(arguments: [
        (401, "unauthorized"), (403, "forbidden"), (404, "notFound"), (418, "client"), (429, "client"),
        (500, "server"), (503, "server"), (304, "unacceptableStatus"),
    ])
    func statusesBecomeErrorCases(code: Int, expected: String) async throws {
        let stub = StubTransport()
        stub.on(.get, "/s", respond: StubTransport.Stub(status: HTTPResponse.Status(code: code), body: Data("oops".utf8)))
        do {
            try await makeClient(stub) { $0.maxRedirects = 0 }.send(Request<Void>.get("/s"))
            Issue.record("no error for \(code)")
        } catch {
            let name = String(describing: error).split(separator: " ").first.map(String.init) ?? ""
            #expect(error.status?.code == code)
            #expect(error.response?.body == Data("oops".utf8))
            switch (expected, error) {
            case ("unauthorized", .unauthorized), ("forbidden", .forbidden), ("notFound", .notFound),
                 ("client", .client), ("server", .server), ("unacceptableStatus", .unacceptableStatus): break
            default: Issue.record("\(code) became \(name)")
            }
        }
    }

    @Test func endpointValidationAcceptsItsOwnCodes() async throws {
        let stub = StubTransport()
        stub.on(UserAPI.teapot, respond: .status(418))
        #expect(try await makeClient(stub).send(UserAPI.teapot).status.code == 418)
    }

    @Test func bodyOverTheLimitIsAClearError() async throws {
        let stub = StubTransport()
        stub.on(.get, "/big", respond: StubTransport.Stub(body: Data(count: 2048)))
        await #expect {
            _ = try await makeClient(stub) { $0.maxBodySize = 1024 }.data(Request<Data>.get("/big"))
        } throws: { error in
            if case NetworkError.bodyTooLarge(limit: 1024) = error { return true }
            return false
        }
    }

    @Test func encodingFailureIsAnErrorNotACrash() async throws {
        struct Reading: Encodable, Sendable { var value: Double }
        let stub = StubTransport()
        await #expect {
            try await makeClient(stub).send(Request<Void>.post("/readings", body: Reading(value: .nan)))
        } throws: { error in
            guard case NetworkError.encoding(let failure) = error else { return false }
            return failure.keyPath == ["value"]
        }
        #expect(stub.recordedRequests.isEmpty)
    }

    @Test func cancellingTheTaskCancelsTheCall() async throws {
        let stub = StubTransport()
        stub.on(.get, "/slow", respond: StubTransport.Stub(delay: .hangGuard))
        let client = makeClient(stub)
        let task = Task { try await client.send(Request<Void>.get("/slow")) }
        #expect(await eventually { !stub.recordedRequests.isEmpty }, "the request reached the stub")
        task.cancel()
        await #expect {
            try await task.value
        } throws: { error in
            if case NetworkError.cancelled = error { return true }
            return false
        }
    }

    @Test func malformedURLIsAnInvalidRequest() async throws {
        let stub = StubTransport()
        await #expect {
            try await makeClient(stub).send(Request<Void>.get("ftp://files.test/x"))
        } throws: { error in
            if case NetworkError.invalidRequest(.malformedURL) = error { return true }
            return false
        }
    }
}

@Test func typedThrowsLetCallersMatchCasesWithoutCasting() async {
    let stub = StubTransport()
    stub.on(.get, "/me", respond: .status(401))
    let client = makeClient(stub)
    var outcome = ""
    do {
        _ = try await client.model(Request<User>.get("/me"), as: User.self)
    } catch .unauthorized(let response) {
        outcome = "login again \(response.status.code)"
    } catch .transport(let failure) where failure.kind == .notConnected {
        outcome = "offline"
    } catch {
        outcome = "\(error)"
    }
    #expect(outcome == "login again 401")
}
