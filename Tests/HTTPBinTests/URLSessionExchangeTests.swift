import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPCore
import HTTPTypes
import Testing
import TestSupport

/// The state machine between URLSession's delegate and a body reader, without I/O: events are
/// fed by hand, in the orders the delegate queue can produce them.
@Suite("URLSessionTransport's exchange state machine")
struct URLSessionExchangeTests {
    let head = HTTPResponse(status: .ok)

    @Test("chunks come out in order, then the end")
    func ordered() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.receive(head: head)
        exchange.receive(Data("a".utf8))
        exchange.receive(Data("b".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        #expect(try await exchange.head().status == .ok)
        #expect(try await exchange.nextChunk() == Data("a".utf8))
        #expect(try await exchange.nextChunk() == Data("b".utf8))
        #expect(try await exchange.nextChunk() == nil)
    }

    @Test("more unread bytes than the limit fail the body with bodyTooLarge")
    func readAheadLimit() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 10)
        exchange.receive(head: head)
        exchange.receive(Data(count: 8))
        exchange.receive(Data(count: 8))
        exchange.complete(error: nil, fallbackHead: nil)
        await #expect {
            _ = try await exchange.nextChunk()
        } throws: { error in
            guard case NetworkError.bodyTooLarge(let limit) = error else { return false }
            return limit == 10
        }
    }

    @Test("the first ending wins: a late completion after a cancel changes nothing")
    func firstEndingWins() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.receive(head: head)
        exchange.fail(.cancelled)
        exchange.complete(error: nil, fallbackHead: head)
        exchange.complete(error: .transport(TransportFailure(.other, "late")), fallbackHead: nil)
        await #expect {
            _ = try await exchange.nextChunk()
        } throws: { error in
            guard case NetworkError.cancelled = error else { return false }
            return true
        }
    }

    @Test("a completion without any head is invalidResponse; with a fallback head it is that head")
    func missingHead() async throws {
        let without = URLSessionExchange(maxBufferedBytes: 1024)
        without.complete(error: nil, fallbackHead: nil)
        await #expect {
            _ = try await without.head()
        } throws: { error in
            guard case NetworkError.transport(let failure) = error else { return false }
            return failure.kind == .invalidResponse
        }
        let fallback = URLSessionExchange(maxBufferedBytes: 1024)
        fallback.complete(error: nil, fallbackHead: HTTPResponse(status: .movedPermanently))
        #expect(try await fallback.head().status.code == 301)
        #expect(try await fallback.nextChunk() == nil)
    }

    @Test("end actions run once, whichever way the exchange ends")
    func endActionsOnce() async throws {
        let count = LockedBox(0)
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.onEnd { count.withLock { $0 += 1 } }
        exchange.receive(head: head)
        exchange.complete(error: nil, fallbackHead: nil)
        exchange.fail(.cancelled)
        #expect(count.current == 1)
    }

    @Test("a reader waiting for a chunk gets it as soon as it arrives")
    func waitingReader() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.receive(head: head)
        let reader = Task { try await exchange.nextChunk() }
        // Whether the reader is already waiting or not, the chunk reaches it exactly once.
        exchange.receive(Data("x".utf8))
        #expect(try await reader.value == Data("x".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        #expect(try await exchange.nextChunk() == nil)
    }

    @Test("an exchange that streams never hands its body over in one piece")
    func streamingKeepsChunks() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.receive(head: head)
        exchange.receive(Data("ab".utf8))
        exchange.receive(Data("cd".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        #expect(exchange.takeWholeBody() == nil)
        #expect(try await exchange.nextChunk() == Data("ab".utf8))
    }

    @Test("a held head comes with the whole body, in one piece")
    func heldHead() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024, holdingHeadUpTo: 100)
        let waiting = Task { try await exchange.head() }
        exchange.receive(head: head)
        exchange.receive(Data("ab".utf8))
        exchange.receive(Data("cd".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        #expect(try await waiting.value.status == .ok)
        #expect(exchange.takeWholeBody() == Data("abcd".utf8))
    }

    @Test("a held head is handed over past the limit, and the body then streams whole")
    func heldHeadReleased() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024, holdingHeadUpTo: 3)
        let waiting = Task { try await exchange.head() }
        exchange.receive(head: head)
        exchange.receive(Data("ab".utf8))
        exchange.receive(Data("cd".utf8))
        // More than 3 bytes arrived: the head is out before the end of the body.
        #expect(try await waiting.value.status == .ok)
        #expect(exchange.takeWholeBody() == nil)
        exchange.receive(Data("ef".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        var body = Data()
        while let chunk = try await exchange.nextChunk() { body.append(chunk) }
        #expect(body == Data("abcdef".utf8))
    }

    @Test("a held head fails with the exchange, and a 3xx's fallback head is released at the end")
    func heldHeadEndings() async throws {
        let failing = URLSessionExchange(maxBufferedBytes: 1024, holdingHeadUpTo: 100)
        failing.receive(head: head)
        failing.fail(.cancelled)
        await #expect {
            _ = try await failing.head()
        } throws: { error in
            guard case NetworkError.cancelled = error else { return false }
            return true
        }
        let redirect = URLSessionExchange(maxBufferedBytes: 1024, holdingHeadUpTo: 100)
        redirect.complete(error: nil, fallbackHead: HTTPResponse(status: .movedPermanently))
        #expect(try await redirect.head().status.code == 301)
        #expect(redirect.takeWholeBody() == Data())
    }

    @Test("an exchange past its deadline fails with timedOut; one that ended first is left alone")
    func deadlines() async throws {
        let deadlines = URLSessionDeadlines()
        let late = URLSessionExchange(maxBufferedBytes: 1024)
        let done = URLSessionExchange(maxBufferedBytes: 1024)
        done.receive(head: head)
        done.complete(error: nil, fallbackHead: nil)
        let doneToken = deadlines.add(done, deadline: .now + .milliseconds(10))
        deadlines.remove(doneToken)
        _ = deadlines.add(late, deadline: .now + .milliseconds(20))
        // Later deadlines first, then an earlier one that re-arms the timer.
        let earlier = URLSessionExchange(maxBufferedBytes: 1024)
        _ = deadlines.add(earlier, deadline: .now + .milliseconds(5))
        for exchange in [late, earlier] {
            await #expect {
                _ = try await exchange.head()
            } throws: { error in
                guard case NetworkError.transport(let failure) = error else { return false }
                return failure.kind == .timedOut
            }
        }
        #expect(try await done.head().status == .ok)
        #expect(try await done.nextChunk() == nil)
    }

    @Test("URLError codes and libcurl messages map to transport failure kinds")
    func errorTable() {
        let cases: [(URLError.Code, TransportFailure.Kind)] = [
            (.notConnectedToInternet, .notConnected), (.timedOut, .timedOut), (.cannotConnectToHost, .cannotConnect),
            (.networkConnectionLost, .connectionLost), (.cannotFindHost, .dns), (.dnsLookupFailed, .dns),
            (.serverCertificateUntrusted, .tls), (.secureConnectionFailed, .tls), (.badServerResponse, .invalidResponse),
            (.cannotParseResponse, .invalidResponse),
        ]
        for (code, kind) in cases {
            guard case .transport(let failure) = URLSessionTransport.networkError(for: URLError(code)) else {
                Issue.record("\(code) did not become a transport failure")
                continue
            }
            #expect(failure.kind == kind, "\(code)")
        }
        guard case .cancelled = URLSessionTransport.networkError(for: URLError(.cancelled)) else {
            Issue.record("URLError.cancelled did not become NetworkError.cancelled")
            return
        }
        #expect(URLSessionTransport.kind(forCurlMessage: "SSL certificate problem: self-signed certificate") == .tls)
        #expect(URLSessionTransport.kind(forCurlMessage: "transfer closed with 99990 bytes remaining to read") == .connectionLost)
        #expect(URLSessionTransport.kind(forCurlMessage: "Could not resolve host: nowhere.invalid") == .dns)
        #expect(URLSessionTransport.kind(forCurlMessage: "something new") == .other)
    }

    @Test("a decoded body's head loses Content-Encoding and Content-Length, keeps the rest")
    func decodedHead() throws {
        let url = URL(string: "http://127.0.0.1/")!
        let encoded = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [
            "Content-Encoding": "gzip", "Content-Length": "10", "X-A": "1, 2",
        ])
        let head = try #require(URLSessionTransport.responseHead(encoded))
        #expect(head.headerFields[.contentEncoding] == nil)
        #expect(head.headerFields[.contentLength] == nil)
        #expect(head.headerFields[HTTPField.Name("X-A")!] == "1, 2")
        let plain = HTTPURLResponse(url: url, statusCode: 204, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "0"])
        #expect(try #require(URLSessionTransport.responseHead(plain)).headerFields[.contentLength] == "0")
    }

    @Test("any number of tasks await the head: all get it, 200 rounds; a failure reaches every one")
    func manyHeadWaiters() async throws {
        for round in 0..<200 {
            let exchange = URLSessionExchange(maxBufferedBytes: 1024)
            let fails = round.isMultiple(of: 2)
            let waiters = (0..<(round % 7 + 2)).map { _ in Task { try await exchange.head().status } }
            #expect(await eventually { exchange.parked.heads >= waiters.count }, "round \(round): every waiter parked")
            if fails { exchange.fail(.cancelled) } else { exchange.receive(head: head) }
            for waiter in waiters {
                if fails {
                    await #expect(throws: NetworkError.self) { try await waiter.value }
                } else {
                    #expect(try await waiter.value == .ok)
                }
            }
            #expect(exchange.parked.heads == 0)
        }
    }

    @Test("a second concurrent body reader is refused at once; the first still gets its chunk")
    func secondBodyReaderRefused() async throws {
        let exchange = URLSessionExchange(maxBufferedBytes: 1024)
        exchange.receive(head: head)
        let first = Task { try await exchange.nextChunk() }
        #expect(await eventually { exchange.parked.body }, "the first reader parked")
        await #expect(throws: NetworkError.self) { try await exchange.nextChunk() }
        exchange.receive(Data("a".utf8))
        #expect(try await first.value == Data("a".utf8))
        exchange.complete(error: nil, fallbackHead: nil)
        #expect(try await exchange.nextChunk() == nil)
    }

    @Test("request fields: repeated ones joined, Cookie with '; ', framing left to URLSession")
    func requestFields() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "a"))
        fields.append(HTTPField(name: HTTPField.Name("x-multi")!, value: "b"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        fields[.contentLength] = "5"
        fields[.transferEncoding] = "chunked"
        let request = HTTPRequest(method: .put, url: URL(string: "http://127.0.0.1:8080/p?q=1%202")!, headerFields: fields)
        let urlRequest = try URLSessionTransport.urlRequest(for: request, timeout: .milliseconds(300))
        #expect(urlRequest.httpMethod == "PUT")
        #expect(urlRequest.url?.absoluteString == "http://127.0.0.1:8080/p?q=1%202")
        #expect(urlRequest.value(forHTTPHeaderField: "X-Multi") == "a, b")
        #expect(urlRequest.value(forHTTPHeaderField: "Cookie") == "a=1; b=2")
        #expect(urlRequest.value(forHTTPHeaderField: "Content-Length") == nil)
        #expect(urlRequest.value(forHTTPHeaderField: "Transfer-Encoding") == nil)
        #expect(urlRequest.timeoutInterval >= 1)
    }
}
