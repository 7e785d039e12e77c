import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct RedirectTests {
    @Test func redirectChainIsFollowedAndCounted() async throws {
        let stub = StubTransport()
        stub.on(.get, "/a", respond: .status(302, headers: [.location: "/v1/b"]))
        stub.on(.get, "/b", respond: .status(301, headers: [.location: "c"]))
        stub.on(.get, "/c", respond: .json(#"{"id":1,"name":"end"}"#))
        let response = try await makeClient(stub).response(Request<User>.get("/a"), as: User.self)
        #expect(response.body.name == "end")
        #expect(response.metrics.redirects == 2)
        #expect(response.request.path == "/v1/c")
    }

    @Test func credentialsAreDroppedWhenTheHostChanges() async throws {
        let stub = StubTransport()
        stub.on(.get, "/same", respond: .status(307, headers: [.location: "https://api.test/v1/next"]))
        stub.on(.get, "/next", respond: .status(302, headers: [.location: "https://elsewhere.test/final"]))
        stub.on(.get, "/final", respond: .status(200))
        let headers: HTTPFields = [.authorization: "Bearer secret", .cookie: "session=1", .accept: "*/*"]
        try await makeClient(stub).send(Request<Void>.get("/same", headers: headers))
        let hops = stub.recordedRequests.map(\.head)
        #expect(hops.count == 3)
        #expect(hops[1].headerFields[.authorization] == "Bearer secret")
        #expect(hops[2].authority == "elsewhere.test")
        #expect(hops[2].headerFields[.authorization] == nil)
        #expect(hops[2].headerFields[.cookie] == nil)
        #expect(hops[2].headerFields[.accept] == "*/*")
    }

    @Test func seeOtherTurnsPostIntoGetAnd307KeepsTheBody() async throws {
        let stub = StubTransport()
        stub.on(.post, "/form", respond: .status(303, headers: [.location: "/v1/result"]))
        stub.on(.get, "/result", respond: .status(200))
        stub.on(.put, "/doc", respond: .status(307, headers: [.location: "/v1/doc2"]))
        stub.on(.put, "/doc2", respond: .status(204))
        let client = makeClient(stub)
        try await client.send(Request<Void>.post("/form", body: .text("x=1")))
        try await client.send(Request<Void>.put("/doc", body: .text("payload")))
        let recorded = stub.recordedRequests
        #expect(recorded[1].head.method == .get)
        #expect(recorded[1].body == nil || recorded[1].body?.isEmpty == true)
        #expect(recorded[1].head.headerFields[.contentType] == nil)
        #expect(recorded[3].head.method == .put)
        #expect(recorded[3].body == Data("payload".utf8))
    }

    @Test func tooManyRedirectsIsAnError() async throws {
        let stub = StubTransport()
        stub.on(.get, "/loop", respond: .status(302, headers: [.location: "/v1/loop"]))
        await #expect {
            try await makeClient(stub) { $0.maxRedirects = 3 }.send(Request<Void>.get("/loop"))
        } throws: { error in
            if case NetworkError.tooManyRedirects(limit: 3, _) = error { return true }
            return false
        }
        #expect(stub.recordedRequests.count == 4)
    }
}
