import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing

/// `QueueError` is a struct over a private code: kinds match in `catch` and in a `switch` with a
/// `default`, errors compare by kind and details, and descriptions stay as they were.
@Suite("QueueError: kinds, details, matching and descriptions")
struct QueueErrorTests {
    func thrown(_ error: QueueError) throws { throw error }

    @Test("a kind matches in catch, in a switch over kind, and by ==; details are properties")
    func matching() throws {
        do {
            try thrown(.diskFull(path: "/var/lib/app/queue.db"))
            Issue.record("not thrown")
        } catch QueueError.Kind.noSuchEntry {
            Issue.record("another kind matched")
        } catch QueueError.Kind.diskFull {
            // matched
        }
        do {
            try thrown(.noSuchEntry(42))
        } catch let error as QueueError where error.kind == .noSuchEntry {
            #expect(error.entryID == 42)
            #expect(error.path == nil)
        }
        let error = QueueError.newerSchema(path: "q.db", found: 9, supported: 8)
        let verdict = switch error.kind {
        case .newerSchema: "upgrade"
        case .corruptDatabase: "restore"
        default: "other"
        }
        #expect(verdict == "upgrade")
        #expect(error.foundVersion == 9 && error.supportedVersion == 8)
        #expect(QueueError.secretHeader(name: "Authorization").headerName == "Authorization")
        #expect(QueueError.io(path: "q.db", reason: "EIO").reason == "EIO")
    }

    @Test("equal kinds and details are equal; read-only is a kind of its own")
    func equality() {
        #expect(QueueError.noSuchEntry(7) == .noSuchEntry(7))
        #expect(QueueError.noSuchEntry(7) != .noSuchEntry(8))
        #expect(QueueError.noSuchEntry(7) != .entryInFlight(7))
        #expect(QueueError.readOnly(path: "q.db").kind != QueueError.cannotCreate(path: "q.db", reason: "read-only").kind)
        #expect(Set([QueueError.diskFull(path: "a"), .diskFull(path: "a"), .diskFull(path: "b")]).count == 2)
        #expect(QueueError.Kind.unavailable.description == "unavailable")
    }

    @Test("descriptions name the kind, the place and the details")
    func descriptions() {
        #expect(QueueError.corruptDatabase(path: "q.db", reason: "not a database").description
            == "q.db is not a valid queue database (not a database); nothing in it was changed")
        #expect(QueueError.newerSchema(path: "q.db", found: 99, supported: 8).description
            == "q.db has schema version 99, newer than the 8 this version understands; upgrade Courier to use it")
        #expect(QueueError.cannotCreate(path: "q.db", reason: "EACCES").description == "cannot create or open q.db for writing: EACCES")
        #expect(QueueError.readOnly(path: "q.db").description == "cannot write to q.db: the queue was opened read-only")
        #expect(QueueError.databaseMissing(path: "q.db").description == "no queue database at q.db")
        #expect(QueueError.diskFull(path: "q.db").description == "the disk holding q.db is full; nothing was stored")
        #expect(QueueError.io(path: "q.db", reason: "EIO").description == "I/O error on q.db: EIO")
        #expect(QueueError.invalidRequest("bad URL").description == "invalid request: bad URL")
        #expect(QueueError.secretHeader(name: "Cookie").description == "header Cookie holds a secret, which is not stored by default")
        #expect(QueueError.noSuchEntry(3).description == "no entry with id 3")
        #expect(QueueError.entryInFlight(3).description == "entry 3 is being sent by a drainer right now")
        #expect(QueueError.unavailable(location: "postgres://u@h/db", reason: "refused").description
            == "cannot reach the queue's database at postgres://u@h/db: refused; nothing was changed")
        #expect((QueueError.diskFull(path: "q.db") as any LocalizedError).errorDescription == "the disk holding q.db is full; nothing was stored")
    }
}

/// `TemplateError` has the same shape: kinds match in `catch` and by `==`, details are
/// properties, and the descriptions name what to do.
@Suite("TemplateError: kinds, details and matching")
struct TemplateErrorTests {
    let api = Origin("https://api.example.com")!

    @Test("each failure of a real resolution is its kind, with its details")
    func kinds() throws {
        var templates = HeaderTemplates(environment: [:], credentialsDirectory: nil)
        try templates.allow("token", for: "https://api.example.com")
        // Through an untyped `throws`: Swift 6.3.1's SIL verifier crashes on this catch over a
        // `do throws(TemplateError)` in this function (a compiler bug, not the pattern's).
        let resolve: () throws -> Void = { _ = try templates.resolve("Bearer ${env:token}", for: api) }
        do {
            try resolve()
            Issue.record("resolved without the variable")
        } catch TemplateError.Kind.notAllowed {
            Issue.record("another kind matched")
        } catch TemplateError.Kind.missingEnvironment {
            // matched
        }
        #expect(throws: TemplateError.missingEnvironment("token")) { try templates.resolve("Bearer ${env:token}", for: api) }
        #expect(throws: TemplateError.missingCredential("token", directory: nil)) { try templates.resolve("${credential:token}", for: api) }
        #expect(throws: TemplateError.malformed("Bearer ${env:token")) { try templates.resolve("Bearer ${env:token", for: api) }
        let elsewhere = Origin("https://evil.example")!
        let refused = #expect(throws: TemplateError.self) { try templates.resolve("Bearer ${env:token}", for: elsewhere) }
        #expect(refused?.kind == .notAllowed)
        #expect(refused?.name == "${env:token}" && refused?.origin == "https://evil.example")
        #expect(refused?.description.contains("--allow-secret NAME=https://evil.example") == true)
        let cleartext = #expect(throws: TemplateError.self) { try templates.resolve("${env:token}", for: Origin("http://api.example.com")!) }
        #expect(cleartext?.kind == .cleartext)
        #expect(throws: TemplateError.invalidAllowance("token=http://api.example.com")) { try templates.allow("token", for: "http://api.example.com") }
        templates.environment = ["token": "a\nb"]
        let lineBreak = #expect(throws: TemplateError.self) { try templates.resolve("${env:token}", for: api) }
        #expect(lineBreak?.kind == .lineBreak && lineBreak?.text == "${env:token}")
    }

    @Test("equal kinds and details are equal; a kind prints its name")
    func equality() {
        #expect(TemplateError.missingEnvironment("A") == .missingEnvironment("A"))
        #expect(TemplateError.missingEnvironment("A") != .missingEnvironment("B"))
        #expect(TemplateError.notAllowed(template: "t", origin: "o") != .cleartext(template: "t", origin: "o"))
        #expect(TemplateError.Kind.invalidAllowance.description == "invalidAllowance")
        #expect(TemplateError.missingCredential("key", directory: "/run/credentials/x").description == "credential key not found in /run/credentials/x")
    }
}
