import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 48's scenario, from outside: a note created, edited twice, given an attachment and
/// tagged, each step enqueued offline by a `sync` process of its own, then drained against a
/// server that assigns ids: one create, one edit (the two coalesced), one attachment to
/// `/notes/N` (multipart, streamed from a file) and one tag, in that order, each once.
@Suite("sync: offline work in steps, the whole scenario")
struct OfflineStepsScenarioTests {
    /// The attachment, written to a file (streamed from disk when sent).
    static func attachment(in folder: URL) throws -> (path: String, data: Data) {
        let data = NotesServer.attachment()
        let path = folder.appendingPathComponent("photo.multipart").path
        try data.write(to: URL(fileURLWithPath: path))
        return (path, data)
    }

    /// Enqueues the four steps, each by a process of its own; the children are in group
    /// `note`, behind the create. Returns the create's id.
    static func enqueueSteps(_ fixture: SyncCommandTests.Fixture, attachment: String) async throws -> Int {
        let sync = fixture.sync
        let created = try await sync("--json", "enqueue", "POST", fixture.url("/notes"), "-H", "Content-Type: application/json",
                                     "--data", "{\"title\":\"Groceries\"}", "--keep-response")
        let create = try #require((try created.json() as? [String: Any])?["id"] as? Int, "\(created.stderr)")
        let note = fixture.url("/notes") + "/${response:\(create):/id}"
        let step = ["--after", "\(create)", "--group", "note"]
        for text in ["Milk", "Milk, eggs"] {
            let edit = try await sync.run(["enqueue", "PATCH", note, "--data", "{\"title\":\"\(text)\"}", "--replace", "note-edit"] + step)
            #expect(edit.status == 0, "\(edit.stderr)")
        }
        let attached = try await sync.run([
            "enqueue", "POST", note + "/attachments", "-H", "Content-Type: multipart/form-data; boundary=b0undary", "--data-file", attachment,
        ] + step)
        #expect(attached.status == 0, "\(attached.stderr)")
        let tagged = try await sync.run(["enqueue", "POST", note + "/tags", "--data", "{\"tag\":\"home\"}"] + step)
        #expect(tagged.status == 0, "\(tagged.stderr)")
        return create
    }

    static func expectArrived(_ notes: NotesServer, _ fixture: SyncCommandTests.Fixture, attachment: Data, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(notes.processed == NotesServer.inOrder,
                "one create, one edit, one attachment, one tag, in order", sourceLocation: sourceLocation)
        #expect(fixture.server.bodies(of: "/notes/100") == [Data("{\"title\":\"Milk, eggs\"}".utf8)], "the last edit", sourceLocation: sourceLocation)
        #expect(fixture.server.bodies(of: "/notes/100/attachments") == [attachment], "the file as written", sourceLocation: sourceLocation)
    }

    @Test("enqueued offline by five processes, drained online: one create, one coalesced edit, the attachment and the tag to /notes/N, in order; SQLite with one drainer, PostgreSQL with four", arguments: [false, true])
    func scenario(postgres: Bool) async throws {
        let fixture = try await SyncCommandTests.Fixture(postgres: postgres)
        let notes = NotesServer(fixture.server)
        let (file, data) = try Self.attachment(in: fixture.folder)
        let create = try await Self.enqueueSteps(fixture, attachment: file)
        let sync = fixture.sync
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["pending"] as? Int == 1 && stats["blocked"] as? Int == 3 && stats["superseded"] as? Int == 1, "\(stats)")
        #expect(fixture.server.requests.isEmpty, "offline: nothing sent")
        if postgres {
            // Four drainers at once, each a process of its own.
            async let first = sync("drain", "--no-reachability")
            async let second = sync("drain", "--no-reachability")
            async let third = sync("drain", "--no-reachability")
            async let fourth = sync("drain", "--no-reachability")
            // 75 from one that ended while another still held a step in flight.
            for result in try await [first, second, third, fourth] { #expect([0, 75].contains(result.status), "\(result.stdout)\(result.stderr)") }
            // What a drainer that ended early left: nothing, or what the last one released.
            let last = try await sync("drain", "--no-reachability")
            #expect(last.status == 0, "\(last.stdout)\(last.stderr)")
        } else {
            let drained = try await sync("drain", "--no-reachability")
            #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        }
        Self.expectArrived(notes, fixture, attachment: data)
        let shown = try #require(try await sync("--json", "show", "\(create)").json() as? [String: Any])
        let response = try #require(shown["response"] as? [String: Any], "\(shown)")
        #expect(response["status"] as? Int == 201)
        await fixture.finish()
    }

    @Test("kill -9 of the drainer just after the create's delivery: nothing sent twice, the steps go after the restart with the id its kept response gives", arguments: [false, true])
    func killedAfterParent(postgres: Bool) async throws {
        let fixture = try await SyncCommandTests.Fixture(postgres: postgres)
        let notes = NotesServer(fixture.server)
        let (file, data) = try Self.attachment(in: fixture.folder)
        let sync = fixture.sync
        let create = try await Self.enqueueSteps(fixture, attachment: file)
        // The steps are held by a pause of their group, so the drainer is killed between the
        // create's delivery and their sends, whatever the machine's speed.
        let paused = try await sync("pause", "--group", "note")
        #expect(paused.status == 0, "\(paused.stderr)")
        let (drainer, _, _) = try sync.start(["run", "--no-reachability"])
        let delivered = await eventually {
            let shown = try? await sync("--json", "show", "\(create)").json() as? [String: Any]
            return shown?["state"] as? String == "delivered"
        }
        #expect(delivered, "the create was never delivered")
        #expect(drainer.signal(SIGKILL))
        await drainer.exited()
        #expect(notes.processed == ["POST /notes -> 100"])
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["pending"] as? Int == 3 && stats["inflight"] as? Int == 0, "the steps released by the delivery, held by the pause: \(stats)")
        #expect(try await sync("resume", "--group", "note").status == 0)
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        Self.expectArrived(notes, fixture, attachment: data)
        #expect(fixture.server.requests.filter { $0.path == "/notes" }.count == 1, "the create was sent once")
        await fixture.finish()
    }
}
