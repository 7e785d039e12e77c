import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
@testable import OfflineQueueCore
import QueueEncryption
import QueueTestSupport
import Testing
import TestSupport

/// Requests that take values from the responses their parents kept (``ResponseReference``):
/// the values put where each goes, on every store; what an enqueue refuses; what dies unsent.
@Suite("Offline work in steps: values from a parent's response")
struct ResponseReferenceTests {
    /// The parent's answer: an id, a name that needs encoding, a number past 64 bits, an object.
    private static let created = Data(
        #"{"id": 7, "name": "a/b c\"d", "n": 12345678901234567890, "obj": {"k": [1, 2]}, "a~b/c": true, "secret": "MARKER"}"#
            .replacingOccurrences(of: "MARKER", with: SealingTests.marker).utf8
    )

    private static func serve(_ server: TestHTTPServer) {
        server.route("/notes") { _, writer in
            try await writer.respond(
                status: 201,
                headers: [HeaderField(name: "Location", value: "/notes/7"), HeaderField(name: "ETag", value: "\"v1\""),
                          HeaderField(name: "Content-Type", value: "application/json")],
                body: created
            )
        }
        server.route("/plain") { _, writer in try await writer.respond(status: 200, body: Data("not json".utf8)) }
    }

    @Test("a child's URL, headers and body take the parent's values, each as where it goes wants it; one that does not resolve dies naming it", arguments: StoreKind.allCases)
    func resolved(_ kind: StoreKind) async throws {
        try await resolves(kind, sealed: false)
    }

    @Test("the same when the queue seals: the parent's sealed response opens for its child", arguments: StoreKind.allCases)
    func resolvedSealed(_ kind: StoreKind) async throws {
        try await resolves(kind, sealed: true)
    }

    private func resolves(_ kind: StoreKind, sealed: Bool) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            Self.serve(server)
            let keyring = Keyring.generate()
            let queue = try await makeQueue(on: store, server: server) { configuration in
                if sealed { configuration.sealing = QueueSealing(mode: .on, keyring: keyring) }
            }
            let keep = EnqueueOptions(keepResponse: ResponseKeeping())
            let parent = try await queue.enqueue([QueuedRequest(method: "POST", url: server.url("/notes").absoluteString, options: keep)])[0].id
            let plain = try await queue.enqueue([QueuedRequest(method: "GET", url: server.url("/plain").absoluteString, options: keep)])[0].id
            server.keepBodies(of: "/echo/notes/7/items")
            let body = #"{"note": "${response:P:/id}", "big": ${response:P:/n}, "label": "note ${response:P:/name}!", "obj": "${response:P:/obj}", "flag": "${response:P:/a~0b~1c}", "status": ${response:P:status}, "s": "${response:P:/secret}"}"#
                .replacingOccurrences(of: "P", with: String(parent))
            let child = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/echo/notes").absoluteString + "/${response:\(parent):/id}/items?name=${response:\(parent):/name}",
                headers: [("If-Match", "${response:\(parent):header:etag}"), ("X-Status", "${response:\(parent):status}"), ("Content-Type", "application/json")],
                body: .data(Data(body.utf8)), options: EnqueueOptions(after: [parent])
            )])[0].id
            let missing = try await queue.enqueue([QueuedRequest(
                method: "GET", url: server.url("/echo/missing").absoluteString + "/${response:\(parent):/nothing/here}", options: EnqueueOptions(after: [parent])
            )])[0].id
            let notJSON = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/echo/plain").absoluteString, body: .data(Data(#"{"x": ${response:\#(plain):/x}}"#.utf8)),
                options: EnqueueOptions(after: [plain])
            )])[0].id
            let object = try await queue.enqueue([QueuedRequest(
                method: "GET", url: server.url("/echo/object").absoluteString + "/${response:\(parent):/obj}", options: EnqueueOptions(after: [parent])
            )])[0].id
            #expect(try await queue.entry(child)?.responseSources == [parent])
            let summary = try await drainUntilSettled(queue)
            #expect(summary.delivered == 3 && summary.dead == 3, "\(summary)")

            let sent = try #require(server.requests.first { $0.path == "/echo/notes/7/items" })
            #expect(sent.target == "/echo/notes/7/items?name=a%2Fb%20c%22d", "a value is one percent-encoded segment")
            #expect(sent.values(of: "If-Match") == ["\"v1\""] && sent.values(of: "X-Status") == ["201"])
            let sentBody = try #require(server.bodies(of: "/echo/notes/7/items").first)
            #expect(String(decoding: sentBody, as: UTF8.self)
                == #"{"note": 7, "big": 12345678901234567890, "label": "note a/b c\"d!", "obj": {"k": [1, 2]}, "flag": true, "status": 201, "s": "\#(SealingTests.marker)"}"#)
            #expect(!server.requests.contains { $0.target.contains("response") || $0.target.contains("%7B") }, "no placeholder went out")

            let deadMissing = try #require(try await queue.entry(missing))
            #expect(deadMissing.state == .dead && deadMissing.deadReason == .unsendable)
            #expect(deadMissing.lastError?.contains("${response:\(parent):/nothing/here}") == true, "\(deadMissing.lastError ?? "")")
            #expect(deadMissing.lastError?.contains("no member \"nothing\"") == true, "\(deadMissing.lastError ?? "")")
            let deadPlain = try #require(try await queue.entry(notJSON))
            #expect(deadPlain.state == .dead && deadPlain.lastError?.contains("is not JSON") == true, "\(deadPlain.lastError ?? "")")
            let deadObject = try #require(try await queue.entry(object))
            #expect(deadObject.state == .dead && deadObject.lastError?.contains("an object, not a value for a URL") == true, "\(deadObject.lastError ?? "")")
            // The parent's response is sealed, and the value its child sent is nowhere at rest.
            if sealed { try await SealingTests().expectNoMarker(in: store, dumpAtLeast: 1000) }
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("an enqueue refuses a reference it could never resolve, and stores nothing", arguments: StoreKind.allCases)
    func refused(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let url = server.url("/echo").absoluteString
            let keeps = try await queue.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(keepResponse: ResponseKeeping(headers: ["etag"])))])[0].id
            let keepsNoBody = try await queue.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(keepResponse: ResponseKeeping(bodyLimit: 0)))])[0].id
            let keepsNothing = try await queue.enqueue(method: "POST", url: url).id
            let before = try await queue.entries().map(\.id)
            let cases: [(QueuedRequest, String)] = [
                (QueuedRequest(method: "GET", url: url + "/${response:\(keeps):/id}"), "which this entry does not wait for"),
                (QueuedRequest(method: "GET", url: url, headers: [("X-A", "${response:\(keeps):status}")], options: EnqueueOptions(after: [keepsNothing])),
                 "which this entry does not wait for"),
                (QueuedRequest(method: "GET", url: url + "/${response:\(keepsNothing):/id}", options: EnqueueOptions(after: [keepsNothing])),
                 "keeps no response"),
                (QueuedRequest(method: "GET", url: url, headers: [("X-A", "${response:\(keeps):header:location}")], options: EnqueueOptions(after: [keeps])),
                 "does not keep header field location"),
                (QueuedRequest(method: "GET", url: url + "/${response:\(keepsNoBody):/id}", options: EnqueueOptions(after: [keepsNoBody])),
                 "keeps no body"),
                (QueuedRequest(method: "GET", url: "http://${response:\(keeps):/id}.example/x", options: EnqueueOptions(after: [keeps])),
                 "stands in the URL's origin"),
                (QueuedRequest(method: "GET", url: url + "/${response:\(keeps):/id", options: EnqueueOptions(after: [keeps])), "not closed"),
                (QueuedRequest(method: "GET", url: url + "/${response:x:/id}", options: EnqueueOptions(after: [keeps])), "is not an entry id"),
                (QueuedRequest(method: "GET", url: url + "/${response:\(keeps):body}", options: EnqueueOptions(after: [keeps])), "a JSON Pointer"),
                (QueuedRequest(method: "GET", url: url + "/${response:\(keeps):/a~2}", options: EnqueueOptions(after: [keeps])), "'~0' or '~1'"),
                (QueuedRequest(method: "POST", url: url, body: .data(Data("{\"a\": ${response:\(keepsNothing):/id}}".utf8)), options: EnqueueOptions(after: [keepsNothing])),
                 "keeps no response"),
            ]
            for (request, expected) in cases {
                do throws(QueueError) {
                    _ = try await queue.enqueue([request])
                    Issue.record("accepted \(request.url) \(request.headers)")
                } catch {
                    #expect(error.kind == QueueError.Kind.invalidRequest && error.description.contains(expected), "\(request.url): \(error)")
                }
            }
            #expect(try await queue.entries().map(\.id) == before, "nothing stored")
            // A body without `after` is not read for references: it goes as it is.
            let literal = try await queue.enqueue([QueuedRequest(method: "POST", url: url, body: .data(Data("${response:1:/id}".utf8)))])[0].id
            #expect(try await queue.entry(literal)?.responseSources == [])
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("retention keeps a delivered parent while a child that reads it is not sent", arguments: StoreKind.allCases)
    func retentionKeepsTheParent(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            Self.serve(server)
            let queue = try await makeQueue(on: store, server: server)
            let parent = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/notes").absoluteString, options: EnqueueOptions(keepResponse: ResponseKeeping())
            )])[0].id
            let unrelated = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/notes").absoluteString, options: EnqueueOptions(keepResponse: ResponseKeeping())
            )])[0].id
            // The child is due in an hour: its parent is delivered long before.
            let child = try await queue.enqueue([QueuedRequest(
                method: "GET", url: server.url("/echo").absoluteString + "/${response:\(parent):/id}",
                options: EnqueueOptions(notBefore: Date().addingTimeInterval(3600), after: [parent])
            )])[0].id
            _ = try await queue.drain()
            #expect(try await queue.entry(parent)?.state == .delivered)
            #expect(try await queue.entry(child)?.state == .pending)
            let removed = try await queue.store.deleteDelivered(finishedBefore: Date().addingTimeInterval(86_400))
            #expect(removed.deletedEntries == 1)
            #expect(try await queue.entry(unrelated) == nil)
            #expect(try await queue.store.keptResponse(of: parent) != nil, "the parent a waiting child reads stays")
            _ = try await queue.purge(.ids([child]))
            #expect(try await queue.store.deleteDelivered(finishedBefore: Date().addingTimeInterval(86_400)).deletedEntries == 1)
            await queue.close()
            await server.shutdown()
        }
    }

    // MARK: - Values, without a store

    @Test("JSON Pointer: members, escapes, array indices; what is missing is named")
    func pointers() throws {
        let document = [UInt8](#"{"a": {"b/c": [10, {"d~e": "x\"y"}], "": 1}, "s": "t", "n": -1.5e3}"#.utf8)
        func value(_ pointer: String) throws -> String {
            let range = try JSONText.locate(pointer, in: document)
            return String(decoding: document[range], as: UTF8.self)
        }
        #expect(try value("/a/b~1c/0") == "10")
        #expect(try value("/a/b~1c/1/d~0e") == #""x\"y""#)
        #expect(try value("/a/") == "1")
        #expect(try value("/n") == "-1.5e3")
        #expect(try value("") == String(decoding: document, as: UTF8.self))
        #expect(throws: JSONText.Missing.self) { try value("/a/b~1c/2") }
        #expect(throws: JSONText.Missing.self) { try value("/a/b~1c/01") }
        #expect(throws: JSONText.Missing.self) { try value("/s/x") }
        #expect(throws: JSONText.Missing.self) { try value("/zz") }
    }

    @Test("a value in a body: a whole string or a bare placeholder becomes the JSON value, inside a string its escaped text; a header refuses a line break and a template")
    func insertion() throws {
        let response = KeptResponse(
            status: 200, headers: [StoredHeader(name: "x-t", value: "${env:SECRET}")],
            body: Data(#"{"s": "line\nbreak \"q\"", "n": 3, "z": null}"#.utf8)
        )
        let values = ResponseValues(responses: [5: response])
        let body = Data(#"{"a": "${response:5:/s}", "b": "<${response:5:/s}>", "c": ${response:5:/n}, "d": "${response:5:/z}", "e": "\"${response:5:/n}"}"#.utf8)
        #expect(String(decoding: try values.body(body), as: UTF8.self)
            == #"{"a": "line\nbreak \"q\"", "b": "<line\nbreak \"q\">", "c": 3, "d": null, "e": "\"3"}"#)
        #expect(throws: ResponseValues.Unresolved.self) { try values.header("${response:5:/s}") }
        #expect(throws: ResponseValues.Unresolved.self) { try values.header("${response:5:header:x-t}") }
        #expect(throws: ResponseValues.Unresolved.self) { try values.header("${response:5:/z}") }
        #expect(try values.header("n=${response:5:/n}") == "n=3")
        #expect(try values.url("https://h/x/${response:5:/s}") == "https://h/x/line%0Abreak%20%22q%22")
        #expect(throws: ResponseValues.Unresolved.self) { try values.url("https://h/x/${response:6:/s}") }
        let cut = ResponseValues(responses: [5: KeptResponse(status: 200, body: Data("{\"a\":".utf8), truncated: true)])
        #expect(throws: ResponseValues.Unresolved.self) { try cut.url("https://h/${response:5:/a}") }
    }
}
