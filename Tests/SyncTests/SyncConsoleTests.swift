import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync console` and `sync run --console`: the operator console served by the built `sync`,
/// read with a real HTTP client.
@Suite("sync console")
struct SyncConsoleTests {
    /// A started `sync` that serves HTTP, with the URL its log announced.
    struct Served {
        let process: ChildProcess
        let log: SyncMetricsTests.Collected
        let base: URL

        /// Starts `sync arguments…` and waits for the log line `message url=http://…`.
        static func start(_ sync: SyncRunner, _ arguments: [String], message: String = "serving the console") async throws -> Served {
            let (process, _, errors) = try sync.start(arguments)
            let log = SyncMetricsTests.Collected(errors.fileHandleForReading)
            var base: URL?
            let announced = await eventually {
                let text = log.text.current
                guard let line = text.split(separator: "\n").first(where: { $0.contains("msg=\"\(message)\"") }),
                      let range = line.range(of: #"url=http://[^ ]+"#, options: .regularExpression) else { return false }
                base = URL(string: String(line[range].dropFirst("url=".count)))
                return true
            }
            guard announced, let base else {
                process.signal(SIGKILL)
                throw TestServerError("sync never said where it serves: \(log.text.current)")
            }
            return Served(process: process, log: log, base: base)
        }

        /// SIGTERM, then its exit status.
        func stop() async throws -> Int32 {
            process.signal(SIGTERM)
            try await SyncRunner.wait(for: process, limit: .hangGuard)
            return process.terminationStatus
        }

        /// `GET path` with these headers: the status, the headers (names in lower case) and the
        /// body. A plain HTTP/1.1 exchange on a socket: URLSession on Linux waits forever on a
        /// 401 with `WWW-Authenticate`.
        /// `method` (GET unless told) with a form body when there is one.
        func get(_ path: String, method: String = "GET", json: Bool = false, authorization: String? = nil, form: String? = nil) async throws -> (status: Int, headers: [String: String], body: Data) {
            let host = try #require(base.host), port = try #require(base.port)
            var request = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
            if json { request += "Accept: application/json\r\n" }
            if let authorization { request += "Authorization: \(authorization)\r\n" }
            if let form { request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n" }
            request += "\r\n" + (form ?? "")
            let answer = await onOwnThread { [request] in Self.exchange(host: host, port: port, request: Array(request.utf8)) }
            let bytes = try #require(answer, "no answer from \(host):\(port)")
            let separator = Data("\r\n\r\n".utf8)
            let end = try #require(bytes.range(of: separator), "no end of the head")
            let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let status = Int(head[0].split(separator: " ")[1]) ?? 0
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return (status, headers, Data(bytes[end.upperBound...]))
        }

        /// Sends `request` to an IPv4 `host:port` and reads until the server closes.
        static func exchange(host: String, port: Int, request: [UInt8]) -> Data? {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { return nil }
            defer { close(socket) }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0, request.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
            var answer = Data()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                if count <= 0 { return count == 0 ? answer : nil }
                answer.append(contentsOf: buffer[..<count])
            }
        }
    }

    static func basic(_ name: String, _ password: String) -> String {
        "Basic " + Data("\(name):\(password)".utf8).base64EncodedString()
    }

    @Test("sync console serves the overview on loopback without users; its JSON counts are sync --json stats'; SIGTERM stops it")
    func overviewOnLoopback() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        for index in 0..<2 { #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=\(index)")).status == 0) }
        #expect(try await sync("enqueue", "POST", fixture.url("/status/404")).status == 0)
        _ = try await sync("drain")
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=late"), "--group", "g1").status == 0)
        #expect(try await sync("pause", "--group", "g1").status == 0)
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])

        let served = try await Served.start(sync, ["console", "--address", "127.0.0.1:0", "--log-level", "debug"])
        let page = try await served.get("/")
        #expect(page.status == 200)
        #expect(String(decoding: page.body, as: UTF8.self).contains("<html"))
        #expect(page.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        let twin = try await served.get("/", json: true)
        #expect(twin.status == 200)
        let overview = try #require(try JSONSerialization.jsonObject(with: twin.body) as? [String: Any])
        let counts = try #require(overview["counts"] as? [String: Any])
        for (name, key) in [("pending", "pending"), ("delivered", "delivered"), ("dead", "dead"), ("due", "due"), ("inflight", "inflight"), ("inflightOrphaned", "inflight_orphaned")] {
            #expect((counts[name] as? Int) == (stats[key] as? Int), "\(name): \(counts[name] ?? "nil") against \(stats[key] ?? "nil")")
        }
        #expect((counts["delivered"] as? Int) == 2 && (counts["dead"] as? Int) == 1 && (counts["pending"] as? Int) == 1)
        #expect(overview["queuePaused"] as? Bool == false)
        #expect((overview["pausedGroups"] as? [Any])?.count == 1)
        #expect(try await served.get("/healthz").status == 200)
        #expect(try await served.stop() == 0, "\(served.log.text.current)")
        #expect(served.log.text.current.contains("sync console stopped"))
        #expect(served.log.text.current.contains("level=debug"), "--log-level debug lets debug lines through")
        await fixture.finish()
    }

    @Test("sync demo --keep leaves its queue, and sync console shows its overview as a new user opens it; a path taken is refused")
    func demoQueueInTheConsole() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-demo-keep-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("demo.db").path
        let sync = SyncRunner(database: path)
        let demo = try await sync.run(["demo", "--requests", "6", "--keep", path])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stdout.contains("kept the queue at \(path)"), "\(demo.stdout)")
        let served = try await Served.start(sync, ["console", "--address", "127.0.0.1:0"])
        let page = try await served.get("/")
        #expect(page.status == 200, "no user, no password: the overview")
        #expect(String(decoding: page.body, as: UTF8.self).contains("<html"))
        let overview = try #require(try JSONSerialization.jsonObject(with: try await served.get("/", json: true).body) as? [String: Any])
        #expect((overview["counts"] as? [String: Any])?["delivered"] as? Int == 6)
        #expect(try await served.stop() == 0)
        let again = try await sync.run(["demo", "--keep", path])
        #expect(again.status == 64 && again.stderr.contains("a file is there already"), "\(again.stderr)")
    }

    @Test("add-user writes a 0600 file whose password and token users sign in; without credentials 401; a wrong password 401")
    func usersSignIn() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo")).status == 0)
        let users = fixture.folder.appendingPathComponent("console-users").path
        let added = try await sync.run(["console", "add-user", "ops", "--role", "admin", "--credentials", users, "--iterations", "1000"], input: "s3cret pass\n")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.isEmpty, "a password is never printed")
        let attributes = try FileManager.default.attributesOfItem(atPath: users)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let robot = try await sync("console", "add-user", "robot", "--role", "read", "--token", "--credentials", users)
        #expect(robot.status == 0, "\(robot.stderr)")
        let token = robot.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count >= 40)
        let text = try String(contentsOfFile: users, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 2 && !text.contains(token) && !text.contains("s3cret"))
        let again = try await sync.run(["console", "add-user", "ops", "--role", "read", "--credentials", users], input: "other\n")
        #expect(again.status == 65 && again.stderr.contains("already has a user ops"), "\(again.stderr)")
        let noPassword = try await sync.run(["console", "add-user", "x", "--role", "read", "--credentials", users], input: "")
        #expect(noPassword.status == 64, "\(noPassword.stderr)")

        let served = try await Served.start(sync, ["console", "--address", "127.0.0.1:0", "--credentials", users])
        let refused = try await served.get("/")
        #expect(refused.status == 401)
        #expect(refused.headers["www-authenticate"]?.hasPrefix("Basic realm=") == true)
        #expect(try await served.get("/", authorization: Self.basic("ops", "wrong")).status == 401)
        #expect(try await served.get("/", json: true, authorization: Self.basic("ops", "s3cret pass")).status == 200)
        #expect(try await served.get("/entries", json: true, authorization: "Bearer \(token)").status == 200)
        #expect(try await served.stop() == 0)

        // A file other users may read is refused, and left as it was.
        chmod(users, 0o640)
        let open = try await sync.run(["console", "add-user", "late", "--role", "read", "--credentials", users], input: "pw\n")
        #expect(open.status == 78, "\(open.stderr)")
        #expect(try String(contentsOfFile: users, encoding: .utf8) == text)
        // Nor is such a file served from, by sync console or sync run --console, nor a link to a private one.
        for arguments in [["console", "--address", "127.0.0.1:0"], ["run", "--no-reachability", "--console", "127.0.0.1:0"]] {
            let refused = try await sync.run(arguments + ["--credentials", users], limit: .hangGuard)
            #expect(refused.status == 78 && refused.stderr.contains("its group may read or write it; chmod 600 it"), "\(arguments): \(refused.stderr)")
        }
        chmod(users, 0o600)
        let link = fixture.folder.appendingPathComponent("users-link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: users)
        let linked = try await sync.run(["console", "--address", "127.0.0.1:0", "--credentials", link], limit: .hangGuard)
        #expect(linked.status == 78 && linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        await fixture.finish()
    }

    @Test("a non-loopback address without users is refused with 64, by sync console and sync run --console")
    func nonLoopbackWithoutUsers() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo")).status == 0)
        for arguments in [["console", "--address", "0.0.0.0:0"], ["run", "--no-reachability", "--console", "0.0.0.0:0"]] {
            let refused = try await sync.run(arguments, limit: .hangGuard)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("without users"), "\(refused.stderr)")
        }
        let missing = try await sync("console", "--credentials", fixture.folder.appendingPathComponent("nobody").path)
        #expect(missing.status == 66, "\(missing.stderr)")
        let bad = try await sync("console", "--address", "host:port")
        #expect(bad.status == 64 && bad.stderr.contains("--address"), "\(bad.stderr)")
        let level = try await sync("console", "--log-level", "loud")
        #expect(level.status == 64 && level.stderr.contains("--log-level loud is not a level"), "\(level.stderr)")
        await fixture.finish()
    }

    @Test("sync run --console serves the console and /metrics on one server while it delivers")
    func runServesConsoleAndMetrics() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo"), "--name", "POST /echo").status == 0)
        let served = try await Served.start(sync, ["run", "--no-reachability", "--poll", "0.2", "--console", "127.0.0.1:0"])
        #expect(await eventually {
            served.log.text.current.contains("serving metrics\" url=\(served.base.absoluteString.dropLast())/metrics")
        }, "\(served.log.text.current)")
        var delivered = 0
        #expect(try await eventually {
            let twin = try await served.get("/", json: true)
            let counts = (try JSONSerialization.jsonObject(with: twin.body) as? [String: Any])?["counts"] as? [String: Any]
            delivered = counts?["delivered"] as? Int ?? 0
            return delivered == 1
        }, "delivered: \(delivered)")
        let metrics = try await served.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = String(decoding: metrics.body, as: UTF8.self)
        #expect(text.contains(#"courier_queue_delivered_total{endpoint="POST /echo",status_class="2xx"} 1"#), "\(text)")
        // A console action counts in the same /metrics.
        #expect(try await served.get("/pause", method: "POST", json: true, form: "group=g1").status == 200)
        let after = String(decoding: try await served.get("/metrics").body, as: UTF8.self)
        #expect(after.contains(#"courier_console_actions_total{action="pause",result="changed"} 1"#), "\(after)")
        #expect(try await served.stop() == 0, "\(served.log.text.current)")
        await fixture.finish()
    }
}
