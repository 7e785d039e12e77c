import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Plugins
import Testing

/// A settable clock for freshness tests.
final class FakeNow: Sendable {
    private let date = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { date.current }
    func advance(_ seconds: Double) { date.withLock { $0 += seconds } }
}

@Suite struct CacheTests {
    @Test func freshResponseIsServedWithoutASecondRequest() async throws {
        let clock = FakeNow()
        let stub = StubTransport()
        stub.on(.get, "/cached", respond: StubTransport.Stub(headers: [.cacheControl: "max-age=60"], body: Data("v1".utf8)))
        let client = makeClient(stub, interceptors: [CacheInterceptor(now: { clock.now })])
        #expect(try await client.data(Request<Data>.get("/cached")).body == Data("v1".utf8))
        clock.advance(30)
        let second = try await client.data(Request<Data>.get("/cached"))
        #expect(second.body == Data("v1".utf8))
        #expect(second.headers[.age] == "30")
        #expect(stub.recordedRequests.count == 1)
        clock.advance(31)
        _ = try await client.data(Request<Data>.get("/cached"))
        #expect(stub.recordedRequests.count == 2)
    }

    @Test func staleEntryIsRevalidatedAnd304ServesTheStoredBody() async throws {
        let stub = StubTransport()
        stub.on(.get, "/etag") { request in
            if request.head.headerFields[.ifNoneMatch] == "\"abc\"" { return .status(304, headers: [.eTag: "\"abc\""]) }
            return StubTransport.Stub(headers: [.eTag: "\"abc\"", .cacheControl: "no-cache"], body: Data("payload".utf8))
        }
        let client = makeClient(stub, interceptors: [CacheInterceptor()])
        let first = try await client.data(Request<Data>.get("/etag"))
        let second = try await client.data(Request<Data>.get("/etag"))
        #expect(first.body == Data("payload".utf8) && second.body == Data("payload".utf8))
        #expect(second.status == .ok)
        #expect(stub.recordedRequests.count == 2)
        #expect(stub.recordedRequests[1].head.headerFields[.ifNoneMatch] == "\"abc\"")
    }

    @Test func lastModifiedIsUsedWhenThereIsNoETag() async throws {
        let stamp = "Sun, 06 Nov 1994 08:49:37 GMT"
        let stub = StubTransport()
        stub.on(.get, "/lm", respond: StubTransport.Stub(headers: [.lastModified: stamp], body: Data("old".utf8)), .status(304))
        let client = makeClient(stub, interceptors: [CacheInterceptor()])
        _ = try await client.data(Request<Data>.get("/lm"))
        #expect(try await client.data(Request<Data>.get("/lm")).body == Data("old".utf8))
        #expect(stub.recordedRequests[1].head.headerFields[.ifModifiedSince] == stamp)
    }

    @Test func noStoreIsNeverStoredAndUnsafeMethodsInvalidate() async throws {
        let stub = StubTransport()
        stub.on(.get, "/private", respond: StubTransport.Stub(headers: [.cacheControl: "no-store, max-age=60"], body: Data("x".utf8)))
        stub.on(.get, "/item", respond: StubTransport.Stub(headers: [.cacheControl: "max-age=60"], body: Data("a".utf8)),
                StubTransport.Stub(headers: [.cacheControl: "max-age=60"], body: Data("b".utf8)))
        stub.on(.put, "/item", respond: .status(204))
        let cache = ResponseCache()
        let client = makeClient(stub, interceptors: [CacheInterceptor(cache: cache)])
        _ = try await client.data(Request<Data>.get("/private"))
        _ = try await client.data(Request<Data>.get("/private"))
        #expect(stub.recordedRequests.count == 2)
        #expect(try await client.data(Request<Data>.get("/item")).body == Data("a".utf8))
        #expect(try await client.data(Request<Data>.get("/item")).body == Data("a".utf8))
        try await client.send(Request<Void>.put("/item", body: .text("new")))
        #expect(try await client.data(Request<Data>.get("/item")).body == Data("b".utf8))
    }

    @Test func theCacheStaysWithinItsByteBound() async throws {
        let stub = StubTransport()
        for index in 0..<10 {
            stub.on(.get, "/blob/\(index)", respond: StubTransport.Stub(headers: [.cacheControl: "max-age=600"], body: Data(count: 400)))
        }
        let cache = ResponseCache(maxBytes: 1000)
        let client = makeClient(stub, interceptors: [CacheInterceptor(cache: cache)])
        for index in 0..<10 { _ = try await client.data(Request<Data>.get("/blob/\(index)")) }
        #expect(cache.byteCount <= 1000)
        #expect(cache.count == 2)
        _ = try await client.data(Request<Data>.get("/blob/9"))
        #expect(stub.recordedRequests.count == 10)
        _ = try await client.data(Request<Data>.get("/blob/0"))
        #expect(stub.recordedRequests.count == 11)
    }
}

/// One shared client, two users: a private answer never reaches the other user.
@Suite("Cache: responses to credentialed requests")
struct CredentialedCacheTests {
    func client(_ stub: StubTransport, cacheControl: String) -> APIClient {
        stub.on(.get, "/me") { request in
            let user = request.head.headerFields[.authorization] == "Bearer alice" ? "alice" : "bob"
            return StubTransport.Stub(headers: [.cacheControl: cacheControl], body: Data(user.utf8))
        }
        return makeClient(stub, interceptors: [CacheInterceptor()])
    }

    @Test("Bearer alice's answer is neither stored nor served to Bearer bob", arguments: [HTTPField.Name.authorization, .cookie])
    func privateAnswers(field: HTTPField.Name) async throws {
        let stub = StubTransport()
        let client = client(stub, cacheControl: "max-age=60")
        let value = { (user: String) in field == .authorization ? "Bearer \(user)" : "session=\(user)" }
        _ = try await client.data(Request<Data>.get("/me", headers: [field: value("alice")]))
        let bob = try await client.data(Request<Data>.get("/me", headers: [field: value("bob")]))
        #expect(bob.body == Data("bob".utf8))
        #expect(stub.recordedRequests.count == 2, "the second user went to the network")
    }

    @Test("Cache-Control: public is stored and served even for a credentialed request")
    func publicAnswers() async throws {
        let stub = StubTransport()
        let client = client(stub, cacheControl: "public, max-age=60")
        _ = try await client.data(Request<Data>.get("/me", headers: [.authorization: "Bearer alice"]))
        _ = try await client.data(Request<Data>.get("/me", headers: [.authorization: "Bearer bob"]))
        #expect(stub.recordedRequests.count == 1)
    }
}
