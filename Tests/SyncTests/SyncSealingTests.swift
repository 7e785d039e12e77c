import CourierTesting
import Foundation
import GRDB
import HTTPCore
import HTTPTypes
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Sealing at rest through `sync`, run as a user would: `--keyring` and `--sealing` on the
/// queue commands, `sync keys status|rotate|encrypt`, and the exit statuses of a keyring that
/// does not fit the queue.
@Suite("sync: sealing at rest, keyrings and key rotation")
struct SyncSealingTests {
    /// A queue in a folder of its own (so every file of it can be read), keyrings in another,
    /// a loopback server that answers 200 to anything and keeps what it received, and `sync`
    /// with no systemd credential and no `SYNC_SEALING`.
    struct Fixture {
        let folder: URL
        let queueFolder: URL
        let stub = StubTransport(fallback: .status(200))
        /// The server's answers: the stub's, held for the paths a test holds.
        let answers: HeldAnswers
        let server: LoopbackServer
        var sync: SyncRunner

        init() async throws {
            folder = try makeTemporaryFolder("sync-sealing")
            queueFolder = folder.appendingPathComponent("queue")
            try FileManager.default.createDirectory(at: queueFolder, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("keys"), withIntermediateDirectories: false)
            answers = HeldAnswers(stub)
            server = try await LoopbackServer.start(answering: answers)
            sync = SyncRunner(database: queueFolder.appendingPathComponent("queue.db").path)
            sync.environment["CREDENTIALS_DIRECTORY"] = ""
            sync.environment["SYNC_SEALING"] = ""
        }

        func url(_ pathAndQuery: String) -> String { server.url(pathAndQuery).absoluteString }

        /// The path of keyring `name`.
        func keyring(_ name: String) -> String { folder.appendingPathComponent("keys/\(name)").path }

        /// Makes keyring `name` with `sync keys new` and returns its path and primary key id.
        func newKeyring(_ name: String = "queue.keyring") async throws -> (path: String, id: String) {
            let path = keyring(name)
            let made = try await sync("--json", "keys", "new", "--keyring", path)
            #expect(made.status == 0, "\(made.stderr)")
            let object = try #require(try made.json() as? [String: Any])
            return (path, try #require(object["id"] as? String))
        }

        /// `sync --json keys status`, with `arguments`.
        func status(_ arguments: String...) async throws -> [String: Any] {
            let result = try await sync.run(["--json", "keys", "status"] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try result.json() as? [String: Any])
        }

        /// `sync --json show ID`.
        func show(_ id: Int) async throws -> [String: Any] {
            let result = try await sync("--json", "show", String(id))
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try result.json() as? [String: Any])
        }

        /// What `sync` reports of the queue's entries: every entry in full (but its next
        /// attempt, a boot-clock time shown as wall time, which moves by a millisecond now and
        /// then), and the counts by key. Equal before and after a command that changed nothing.
        func snapshot() async throws -> String {
            let list = try await sync("--json", "list", "--state", "all", "--limit", "100000")
            #expect(list.status == 0, "\(list.stderr)")
            let ids = try #require(try list.json() as? [[String: Any]]).compactMap { $0["id"] as? Int }
            var shown = [Data]()
            for id in ids {
                var entry = try await show(id)
                entry["next_attempt_at"] = nil
                shown.append(try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]))
            }
            return shown.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n") + "\n" + (try await sync("--json", "keys", "status").stdout)
        }

        /// The number of entries in the queue, of any state.
        func count() async throws -> Int {
            let result = try await sync("--json", "list", "--state", "all", "--limit", "100000")
            return try #require(try result.json() as? [Any]).count
        }

        /// Every regular file under the queue's folder (the database, its `-wal`, `-shm` and
        /// reserve, the body files).
        func queueFiles() -> [URL] {
            let enumerator = FileManager.default.enumerator(at: queueFolder, includingPropertiesForKeys: [.isRegularFileKey])
            return (enumerator?.allObjects as? [URL] ?? []).filter {
                (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            }
        }

        func finish() async {
            await server.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// A keyring file written by hand (Docs/Encryption.md): one key, the primary, `id` with
    /// `bytes`, mode 0600.
    static func writeKeyring(_ path: String, id: String, bytes: Data) throws {
        let text = "courier-keyring v1\n\(id) \(bytes.base64EncodedString()) primary\n"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        chmod(path, 0o600)
    }

    static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    @Test("enqueue with --keyring seals: status counts it under the key; the marker in path, query, header and body is in no file; drain --keyring delivers it exactly")
    func sealedRoundTrip() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let (keyring, id) = try await fixture.newKeyring()
        let marker = "m4rk3r-\(UUID().uuidString.prefix(8).lowercased())"
        // A body over 64 KiB, so it is kept in a file beside the database.
        let body = Data((0..<3000).map { "\(marker) line \($0)\n" }.joined().utf8)
        #expect(body.count > 64 * 1024)
        let bodyFile = fixture.folder.appendingPathComponent("body.txt")
        try body.write(to: bodyFile)
        let small = Data("{\"note\":\"\(marker)\"}".utf8)
        let target = "/deliver/\(marker)?q=\(marker)"
        let big = try await sync("enqueue", "POST", fixture.url(target), "-H", "X-Marker: \(marker)", "--data-file", bodyFile.path, "--keyring", keyring)
        #expect(big.status == 0, "\(big.stderr)")
        let inline = try await sync("enqueue", "PUT", fixture.url(target), "-H", "X-Marker: \(marker)", "--data", String(decoding: small, as: UTF8.self), "--keyring", keyring)
        #expect(inline.status == 0, "\(inline.stderr)")

        let status = try await fixture.status()
        #expect(status["clear"] as? Int == 0)
        #expect(status["sealed"] as? [String: Int] == [id: 2])
        #expect((status["key_checks"] as? [String: String])?.keys.sorted() == [id])
        #expect((status["queue_id"] as? String)?.count == 36)
        #expect(status["keyring"] is NSNull, "no keyring given")
        let withKeyring = try await fixture.status("--keyring", keyring)
        let marks = try #require(withKeyring["keyring"] as? [String: Any])
        #expect(marks["primary"] as? String == id)
        #expect(marks["held"] as? [String] == [id])
        #expect(marks["missing"] as? [String] == [])
        let text = try await sync("keys", "status", "--keyring", keyring)
        #expect(text.stdout.contains("\(id)  2  primary"), "\(text.stdout)")
        #expect(text.stdout.contains("clear     0"), "\(text.stdout)")

        let files = fixture.queueFiles()
        #expect(files.contains { $0.path.contains("queue.db.bodies/") }, "the large body is in a file: \(files)")
        for file in files {
            let bytes = try Data(contentsOf: file)
            #expect(bytes.range(of: Data(marker.utf8)) == nil, "the marker is in \(file.path)")
        }
        let shown = try await fixture.show(1)
        #expect(shown["sealed_key_id"] as? String == id)
        #expect((shown["body"] as? [String: Any])?["length"] as? Int == body.count, "the length as enqueued")

        let drained = try await sync("drain", "--no-reachability", "--keyring", keyring)
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        let requests = fixture.stub.recordedRequests
        try #require(requests.count == 2)
        for (request, expected) in zip(requests.sorted { $0.head.method.rawValue < $1.head.method.rawValue }, [body, small]) {
            #expect(request.head.path == target)
            #expect(request.head.headerFields[HTTPField.Name("X-Marker")!] == marker)
            #expect(SHA256Hex.of(request.body ?? Data()) == SHA256Hex.of(expected))
        }
        await fixture.finish()
    }

    @Test("on PostgreSQL: enqueue sealed and in clear, status, encrypt, add and rotate, then a required drain delivers both")
    func postgres() async throws {
        guard let url = ProcessInfo.processInfo.environment["COURIER_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw TestServerError("COURIER_TEST_POSTGRES_URL is not set: run Tools/test, which starts a throwaway PostgreSQL cluster")
        }
        var fixture = try await Fixture()
        fixture.sync = SyncRunner(database: url + (url.contains("?") ? "&" : "?") + "schema=s_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""), environment: fixture.sync.environment)
        let sync = fixture.sync
        let (keyring, first) = try await fixture.newKeyring()
        #expect(try await sync("enqueue", "POST", fixture.url("/pg/clear?n=1"), "--data", "clear").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/pg/sealed?n=2"), "-H", "X-N: 2", "--data", "sealed", "--keyring", keyring).status == 0)
        let status = try await fixture.status("--keyring", keyring)
        #expect(status["clear"] as? Int == 1)
        #expect(status["sealed"] as? [String: Int] == [first: 1])
        #expect(try await sync("keys", "encrypt", "--keyring", keyring).status == 0)
        #expect(try await sync("keys", "add", "--keyring", keyring).status == 0)
        let rotated = try await sync("--json", "keys", "rotate", "--keyring", keyring)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let newest = try Self.primary(keyring)
        #expect((try rotated.json() as? [String: Any])?["resealed"] as? Int == 2)
        #expect(try await fixture.status()["sealed"] as? [String: Int] == [newest: 2])
        let drained = try await sync("drain", "--no-reachability", "--sealing", "required", "--keyring", keyring)
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        let requests = fixture.stub.recordedRequests.sorted { ($0.head.path ?? "") < ($1.head.path ?? "") }
        #expect(requests.map(\.head.path) == ["/pg/clear?n=1", "/pg/sealed?n=2"])
        #expect(requests.map { String(decoding: $0.body ?? Data(), as: UTF8.self) } == ["clear", "sealed"])
        #expect(requests.last?.head.headerFields[HTTPField.Name("X-N")!] == "2")
        await fixture.finish()
    }

    @Test("drain without a keyring on a sealed queue fails, naming the key and the count; the entry stays pending, unattempted")
    func drainWithoutKeyring() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let (keyring, id) = try await fixture.newKeyring()
        #expect(try await sync("enqueue", "POST", fixture.url("/events"), "--data", "{}", "--keyring", keyring).status == 0)
        let before = try await fixture.snapshot()
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 78, "\(drained.stderr)")
        #expect(drained.stderr.contains(id), "\(drained.stderr)")
        #expect(drained.stderr.contains("1 entry"), "names the count: \(drained.stderr)")
        let entry = try await fixture.show(1)
        #expect(entry["state"] as? String == "pending")
        #expect(entry["attempts"] as? Int == 0)
        #expect(try await fixture.snapshot() == before, "the message says nothing in the queue was changed")
        #expect(fixture.stub.recordedRequests.isEmpty)
        await fixture.finish()
    }

    @Test("other key bytes under a known key id exit 78 (key-check value differs), for drain and enqueue; nothing changes")
    func wrongKeyBytes() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let (keyring, id) = try await fixture.newKeyring()
        #expect(try await sync("enqueue", "POST", fixture.url("/events"), "--data", "{}", "--keyring", keyring).status == 0)
        let wrong = fixture.keyring("wrong.keyring")
        try Self.writeKeyring(wrong, id: id, bytes: Self.randomBytes(32))
        let before = try await fixture.snapshot()
        for arguments in [["drain", "--no-reachability"], ["enqueue", "POST", fixture.url("/more")], ["keys", "rotate"]] {
            let refused = try await sync.run(arguments + ["--keyring", wrong])
            #expect(refused.status == 78, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("key \(id)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("key-check value differs"), "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "one line")
        }
        // The service stops too, rather than logging the refusal at every poll.
        let run = try await sync.run(["run", "--no-reachability", "--keyring", wrong], limit: .hangGuard)
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains("key-check value differs"), "\(run.stderr)")
        #expect(try await fixture.snapshot() == before)
        #expect(fixture.stub.recordedRequests.isEmpty)
        await fixture.finish()
    }

    @Test("a world-readable keyring exits 78 for queue commands, naming the file and its mode; nothing changes")
    func worldReadableKeyring() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let (keyring, _) = try await fixture.newKeyring()
        #expect(try await sync("enqueue", "POST", fixture.url("/events"), "--data", "{}", "--keyring", keyring).status == 0)
        chmod(keyring, 0o644)
        let before = try await fixture.snapshot()
        for arguments in [["drain", "--no-reachability"], ["enqueue", "POST", fixture.url("/more")], ["keys", "status"], ["keys", "rotate"], ["stats"]] {
            let refused = try await sync.run(arguments + ["--keyring", keyring])
            #expect(refused.status == 78, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr == "sync: refusing keyring \(keyring) (mode 644): other users may read or write it; chmod 600 it\n")
        }
        let missing = try await sync("stats", "--keyring", fixture.keyring("missing.keyring"))
        #expect(missing.status == 66)
        #expect(try await fixture.snapshot() == before)
        #expect(fixture.stub.recordedRequests.isEmpty)
        await fixture.finish()
    }

    @Test("--sealing required: 64 without a keyring; 78 on a queue holding entries in clear, naming the count; after keys encrypt it works")
    func required() async throws {
        let fixture = try await Fixture()
        var sync = fixture.sync
        let (keyring, id) = try await fixture.newKeyring()
        for n in 1...3 {
            #expect(try await sync("enqueue", "POST", fixture.url("/clear/\(n)"), "--data", "{\"n\":\(n)}").status == 0)
        }
        let noKeyring = try await sync("stats", "--sealing", "required")
        #expect(noKeyring.status == 64)
        #expect(noKeyring.stderr.contains("--sealing required needs a keyring"), "\(noKeyring.stderr)")

        let before = try await fixture.snapshot()
        let refused = try await sync("drain", "--no-reachability", "--sealing", "required", "--keyring", keyring)
        #expect(refused.status == 78, "\(refused.stderr)")
        #expect(refused.stderr.contains("3 entries are stored in clear"), "\(refused.stderr)")
        #expect(refused.stderr.contains("sync keys encrypt"), "\(refused.stderr)")
        sync.environment["SYNC_SEALING"] = "required"
        let fromEnvironment = try await sync("enqueue", "POST", fixture.url("/more"), "--keyring", keyring)
        #expect(fromEnvironment.status == 78, "\(fromEnvironment.stderr)")
        #expect(try await fixture.snapshot() == before)

        // encrypt opens the queue with sealing on, whatever SYNC_SEALING says.
        let encrypted = try await sync("--json", "keys", "encrypt", "--keyring", keyring, "--batch", "2")
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        let summary = try #require(try encrypted.json() as? [String: Any])
        #expect(summary["resealed"] as? Int == 3)
        #expect(summary["skipped"] as? Int == 0)
        #expect(summary["batches"] as? Int == 2)
        #expect(summary["key_id"] as? String == id)
        let status = try await fixture.status()
        #expect(status["clear"] as? Int == 0)
        #expect(status["sealed"] as? [String: Int] == [id: 3])

        let enqueued = try await sync("enqueue", "POST", fixture.url("/sealed"), "--data", "{}", "--keyring", keyring)
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        let drained = try await sync("drain", "--no-reachability", "--keyring", keyring)
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        #expect(Set(fixture.stub.recordedRequests.compactMap(\.head.path)) == ["/clear/1", "/clear/2", "/clear/3", "/sealed"])
        await fixture.finish()
    }

    @Test("enqueue --sealing required (or SYNC_SEALING=required) without a keyring exits 64 and stores nothing; no database is made")
    func enqueueRequiredWithoutKeyring() async throws {
        let fixture = try await Fixture()
        var sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/first")).status == 0)
        let refused = try await sync("enqueue", "POST", fixture.url("/second"), "--sealing", "required")
        #expect(refused.status == 64)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.contains("--sealing required needs a keyring: give --keyring FILE"), "\(refused.stderr)")
        let on = try await sync("enqueue", "POST", fixture.url("/second"), "--sealing", "on")
        #expect(on.status == 64)
        sync.environment["SYNC_SEALING"] = "required"
        let fromEnvironment = try await sync("enqueue", "POST", fixture.url("/second"))
        #expect(fromEnvironment.status == 64)
        #expect(fromEnvironment.stderr.contains("SYNC_SEALING=required needs a keyring"), "\(fromEnvironment.stderr)")
        sync.environment["SYNC_SEALING"] = "sometimes"
        #expect(try await sync("enqueue", "POST", fixture.url("/second")).status == 64)
        sync.environment["SYNC_SEALING"] = ""
        #expect(try await fixture.count() == 1)

        var elsewhere = SyncRunner(database: fixture.folder.appendingPathComponent("new/queue.db").path)
        elsewhere.environment = sync.environment
        #expect(try await elsewhere("enqueue", "POST", fixture.url("/x"), "--sealing", "required").status == 64)
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("new").path), "nothing was created")
        await fixture.finish()
    }

    @Test("the systemd credential is the keyring when it exists: sealing is on by default; --sealing off stores in clear")
    func credentialKeyring() async throws {
        var fixture = try await Fixture()
        let credentials = fixture.folder.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: false)
        fixture.sync.environment["CREDENTIALS_DIRECTORY"] = credentials.path
        #expect(try await fixture.sync("enqueue", "POST", fixture.url("/clear")).status == 0, "no credential: off")
        let made = try await fixture.sync("--json", "keys", "new", "--keyring", credentials.appendingPathComponent("courier-keyring").path)
        let id = try #require((try made.json() as? [String: Any])?["id"] as? String)
        #expect(try await fixture.sync("enqueue", "POST", fixture.url("/sealed")).status == 0)
        #expect(try await fixture.sync("enqueue", "POST", fixture.url("/off"), "--sealing", "off").status == 0)
        let status = try await fixture.status()
        #expect(status["clear"] as? Int == 2)
        #expect(status["sealed"] as? [String: Int] == [id: 1])
        #expect((status["keyring"] as? [String: Any])?["primary"] as? String == id, "status reads the credential too")
        let drained = try await fixture.sync("drain", "--no-reachability")
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        #expect(fixture.stub.recordedRequests.count == 3)
        await fixture.finish()
    }

    @Test("rotate: everything under the new key; then ten rotations killed with SIGKILL at random points, each run again: all under the newest key, each entry delivered once with its body")
    func rotation() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let (keyring, first) = try await fixture.newKeyring()
        // 2,000 entries: small bodies, and 24 over 64 KiB, kept in files.
        var bodies = [String: Data]()
        for group in 0..<4 {
            let small = Data("{\"group\":\(group),\"text\":\"small body \(group)\"}".utf8)
            bodies["/rotate/small/\(group)"] = small
            let enqueued = try await sync("enqueue", "POST", fixture.url("/rotate/small/\(group)"), "--data", String(decoding: small, as: UTF8.self), "--count", "494", "--keyring", keyring)
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
            let large = Self.randomBytes(70 * 1024 + group)
            let file = fixture.folder.appendingPathComponent("large-\(group).bin")
            try large.write(to: file)
            bodies["/rotate/large/\(group)"] = large
            let files = try await sync("enqueue", "POST", fixture.url("/rotate/large/\(group)"), "--data-file", file.path, "--count", "6", "--keyring", keyring)
            #expect(files.status == 0, "\(files.stderr)")
        }
        let keys = try Self.idempotencyKeys(fixture.sync.database)
        #expect(keys.count == 2000)
        #expect(try await fixture.status()["sealed"] as? [String: Int] == [first: 2000])

        #expect(try await sync("keys", "add", "--keyring", keyring).status == 0)
        let started = ContinuousClock.now
        let rotated = try await sync("keys", "rotate", "--keyring", keyring)
        // How long a whole rotation takes here and now (a busy loop beside the suite makes it
        // several times slower): the kills below land at random points of that span, not of a
        // fixed 30-500 ms that a slow start outlasted ten times in a row.
        let whole = ContinuousClock.now - started
        #expect(rotated.status == 0, "\(rotated.stderr)")
        var newest = try Self.primary(keyring)
        #expect(rotated.stdout == "resealed 2000 entries under key \(newest) in 32 batches; 0 skipped, 0 remaining\n")
        #expect(try await fixture.status()["sealed"] as? [String: Int] == [newest: 2000])

        var interrupted = 0
        for round in 0..<10 {
            #expect(try await sync("keys", "add", "--keyring", keyring).status == 0)
            let previous = newest
            newest = try Self.primary(keyring)
            let (process, _, _) = try sync.start(["keys", "rotate", "--keyring", keyring, "--batch", "16"])
            try await Task.sleep(for: whole * Double.random(in: 0.3...1.0))
            process.signal(SIGKILL)
            await process.exited()
            let split = (try await fixture.status()["sealed"] as? [String: Int] ?? [:]).filter { $0.value > 0 }
            #expect(split.values.reduce(0, +) == 2000, "round \(round): \(split)")
            #expect(Set(split.keys).isSubset(of: [previous, newest]), "round \(round): \(split)")
            if split.count == 2 { interrupted += 1 }
            let again = try await sync("--json", "keys", "rotate", "--keyring", keyring, "--batch", "16")
            #expect(again.status == 0, "round \(round): \(again.stderr)")
            let summary = try #require(try again.json() as? [String: Any])
            #expect(summary["resealed"] as? Int == split[previous] ?? 0, "round \(round): the run again reseals what the killed one left")
            #expect(summary["remaining"] as? Int == 0, "round \(round): nothing left under an older key")
            #expect(summary["key_id"] as? String == newest)
        }
        #expect(interrupted > 0, "some kills landed mid-rotation")
        let status = try await fixture.status()
        #expect(status["sealed"] as? [String: Int] == [newest: 2000])
        #expect(status["clear"] as? Int == 0)
        #expect(try await fixture.count() == 2000)

        let drained = try await sync("drain", "--no-reachability", "--concurrency", "16", "--keyring", keyring)
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        let requests = fixture.stub.recordedRequests
        let received = requests.compactMap { $0.head.headerFields[HTTPField.Name("Idempotency-Key")!] }
        #expect(received.count == 2000)
        #expect(Set(received) == Set(keys), "every idempotency key exactly once")
        #expect(Set(received).count == received.count)
        let expected = bodies.mapValues(SHA256Hex.of)
        var mismatched = 0
        for request in requests where SHA256Hex.of(request.body ?? Data()) != expected[request.head.path ?? ""] { mismatched += 1 }
        #expect(mismatched == 0, "bodies whose hash differs")
        await fixture.finish()
    }

    @Test("SHA256Hex gives FIPS 180-4's answers")
    func sha256KnownAnswers() {
        #expect(SHA256Hex.of(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Hex.of(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Hex.of(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("rotate beside a sync run sending entries: those in flight stay under the old key and it exits 75; run again once they are settled, it finishes")
    func rotateWhileInFlight() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        // Answered once the rotation below has run, however slowly processes start here (a
        // fixed delay of 3 s ran out at load 4: the entries were delivered, then re-sealed).
        fixture.answers.hold("/slow")
        let (keyring, first) = try await fixture.newKeyring()
        for n in 1...3 {
            #expect(try await sync("enqueue", "POST", fixture.url("/slow?n=\(n)"), "--data", "\(n)", "--keyring", keyring).status == 0)
        }
        #expect(try await sync("keys", "add", "--keyring", keyring).status == 0)
        let newest = try Self.primary(keyring)
        // A request timeout that the held answers cannot run out, however long this takes.
        let (service, _, _) = try sync.start(["run", "--no-reachability", "--concurrency", "4", "--timeout", "3600", "--keyring", keyring])
        #expect(await eventually { (try? await sync("--json", "stats").json() as? [String: Any])?["inflight"] as? Int == 3 })

        let early = try await sync("--json", "keys", "rotate", "--keyring", keyring)
        #expect(early.status == 75, "\(early.stderr)")
        #expect(early.stderr == "sync: 3 entries are still under other keys (in flight while this ran, or stored meanwhile by a process with another keyring): run sync keys rotate again\n")
        let summary = try #require(try early.json() as? [String: Any])
        #expect(summary["resealed"] as? Int == 0)
        #expect(summary["remaining"] as? Int == 3)
        #expect(try await fixture.status()["sealed"] as? [String: Int] == [first: 3])

        fixture.answers.release()
        #expect(await eventually { (try? await sync("--json", "stats").json() as? [String: Any])?["delivered"] as? Int == 3 })
        service.signal(SIGTERM)
        await service.exited()
        let again = try await sync("keys", "rotate", "--keyring", keyring)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == "resealed 3 entries under key \(newest) in 1 batch; 0 skipped, 0 remaining\n")
        #expect(try await fixture.status()["sealed"] as? [String: Int] == [newest: 3])
        #expect(fixture.stub.recordedRequests.count == 3)
        await fixture.finish()
    }

    /// The keyring's primary key id, read from the file as written (Docs/Encryption.md).
    static func primary(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasSuffix(" primary") })
        return String(line.prefix(8))
    }

    /// Every entry's idempotency key, read from the database (stored in clear).
    static func idempotencyKeys(_ database: String) throws -> [String] {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: database, configuration: configuration).read { db in
            try String.fetchAll(db, sql: "SELECT idempotency_key FROM entry")
        }
    }
}

/// SHA-256 (FIPS 180-4) as lowercase hexadecimal, for comparing bodies sent with bodies
/// received; the test target has no crypto library.
enum SHA256Hex {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    static func of(_ data: Data) -> String {
        var message = [UInt8](data)
        let bits = UInt64(message.count) * 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var w = [UInt32](repeating: 0, count: 64)
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        message.withUnsafeBufferPointer { bytes in
            for block in stride(from: 0, to: bytes.count, by: 64) {
                for i in 0..<16 {
                    let j = block + 4 * i
                    w[i] = UInt32(bytes[j]) << 24 | UInt32(bytes[j + 1]) << 16 | UInt32(bytes[j + 2]) << 8 | UInt32(bytes[j + 3])
                }
                for i in 16..<64 {
                    let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                    let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                    w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                }
                var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
                for i in 0..<64 {
                    let t1 = hh &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
                    let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                    (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
                for (i, value) in [a, b, c, d, e, f, g, hh].enumerated() { h[i] = h[i] &+ value }
            }
        }
        return h.map { word in
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 8 - hex.count) + hex
        }.joined()
    }
}
