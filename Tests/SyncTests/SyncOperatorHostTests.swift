import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync` on an operator's host: a proxy from the environment or `--proxy` (Debian's tinyproxy,
/// credentials from a systemd credential), `NO_PROXY` around it, an https origin through
/// `CONNECT`, a private CA and a client certificate (nginx with `ssl_verify_client on`), per-origin
/// TLS, `br` answers; and the proxy's password and the client key nowhere but in the process.
@Suite("sync on an operator's host: proxy, private CA, client certificate, brotli", .serialized)
struct SyncOperatorHostTests {
    static let password = "pr0xy-s3cr3t-7f3a"

    /// A folder standing in for `$CREDENTIALS_DIRECTORY`, with `files` written mode 0600.
    static func credentials(in folder: URL, _ files: [String: String]) throws -> String {
        let directory = folder.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(chmod(path, 0o600) == 0)
        }
        return directory.path
    }

    /// Every byte of the queue (its file, WAL and body files, or a `pg_dump` of its schema) and
    /// every given output, without `secret`.
    static func expectNowhere(_ secret: String, queue sync: SyncRunner, folder: URL, outputs: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for output in outputs {
            #expect(!output.contains(secret), "\(output)", sourceLocation: sourceLocation)
        }
        for arguments in [["show", "1"], ["--json", "show", "1", "--reveal-secrets"], ["--json", "list"], ["--json", "stats"]] {
            let shown = try await sync.run(arguments)
            #expect(!shown.stdout.contains(secret) && !shown.stderr.contains(secret), "\(arguments)", sourceLocation: sourceLocation)
        }
        if sync.database.hasPrefix("postgres") {
            let location = try #require(URLComponents(string: sync.database))
            let schema = location.queryItems?.first { $0.name == "schema" }?.value ?? ""
            let dump = try await runTool("/usr/bin/pg_dump", [
                "-h", location.host ?? "127.0.0.1", "-p", String(location.port ?? 5432), "-U", location.user ?? "courier",
                "-d", String(location.path.dropFirst()), "-n", schema,
            ])
            #expect(dump.status == 0, "\(dump.errorText)", sourceLocation: sourceLocation)
            #expect(dump.stdout.range(of: Data(secret.utf8)) == nil, sourceLocation: sourceLocation)
            #expect(!String(decoding: dump.stdout, as: UTF8.self).contains(Data(secret.utf8).map { String(format: "%02x", $0) }.joined()), sourceLocation: sourceLocation)
        } else {
            var scanned = 0
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasPrefix("queue") {
                guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else { continue }
                scanned += 1
                #expect(data.range(of: Data(secret.utf8)) == nil, "in \(name)", sourceLocation: sourceLocation)
            }
            #expect(scanned >= 1, sourceLocation: sourceLocation)
        }
    }

    @Test("HTTP_PROXY and NO_PROXY from the environment, the proxy's password from the credential courier-proxy: sync drain and sync run deliver through tinyproxy, localhost around it; the password is nowhere", arguments: [false, true])
    func proxyFromEnvironment(postgres: Bool) async throws {
        let folder = try makeTemporaryFolder("sync-proxy")
        defer { try? FileManager.default.removeItem(at: folder) }
        let proxy = try await TinyproxyServer.start(credentials: ("alice", Self.password))
        defer { proxy.stop() }
        let server = try await TestHTTPServer.start()
        var sync = SyncRunner(database: postgres ? try SyncCommandTests.Fixture.postgresSchema() : folder.appendingPathComponent("queue.db").path)
        sync.environment = [
            "HTTP_PROXY": "http://alice@127.0.0.1:\(proxy.port)",
            "NO_PROXY": "localhost",
            "CREDENTIALS_DIRECTORY": try Self.credentials(in: folder, ["courier-proxy": "alice:\(Self.password)\n"]),
        ]
        var outputs: [String] = []
        for (index, host) in ["127.0.0.1", "localhost"].enumerated() {
            let enqueued = try await sync("enqueue", "POST", server.url("/echo?n=\(index)", host: host).absoluteString, "--data", "{}")
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
        }
        let drained = try await sync("drain", "--no-reachability", "--log-level", "debug")
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(drained.stdout.contains("delivered 2"), "\(drained.stdout)")
        outputs += [drained.stdout, drained.stderr]
        #expect(proxy.requestLines.count == 1, "\(proxy.log)")
        #expect(proxy.requestLines == ["CONNECT 127.0.0.1:\(server.port) HTTP/1.1"], "\(proxy.requestLines)")
        #expect(server.requests.allSatisfy { $0.values(of: "proxy-authorization").isEmpty })

        // sync run, with the console on: the third entry goes through the proxy too.
        #expect(try await sync("enqueue", "POST", server.url("/echo?n=2").absoluteString).status == 0)
        let served = try await SyncConsoleTests.Served.start(sync, ["run", "--no-reachability", "--console", "127.0.0.1:0", "--log-level", "debug"])
        #expect(await eventually { ((try? await sync("--json", "stats").json() as? [String: Any])?["delivered"] as? Int) == 3 })
        #expect(proxy.requestLines.count == 2, "sync run opened a tunnel of its own: \(proxy.log)")
        for path in ["/", "/entries", "/entries/1", "/entries/3"] {
            let page = try await served.get(path)
            let json = try await served.get(path, json: true)
            #expect(page.status == 200 && json.status == 200, "\(path)")
            outputs += [String(decoding: page.body, as: UTF8.self), String(decoding: json.body, as: UTF8.self)]
        }
        #expect(try await served.stop() == 0)
        outputs.append(served.log.text.current)
        try await Self.expectNowhere(Self.password, queue: sync, folder: folder, outputs: outputs)
        await server.shutdown()
    }

    @Test("an https origin through CONNECT with --ca-file: nginx refuses it without a client certificate (400), delivers it with --client-cert/--client-key or the credentials; the key is nowhere")
    func clientCertificate() async throws {
        let folder = try makeTemporaryFolder("sync-mtls")
        defer { try? FileManager.default.removeItem(at: folder) }
        let proxy = try await TinyproxyServer.start(credentials: ("alice", Self.password))
        defer { proxy.stop() }
        let nginx = try await NginxTLSServer.start(verifyingClients: true)
        defer { nginx.stop() }
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        let common = ["drain", "--no-reachability", "--proxy", proxy.url(credentials: ("alice", Self.password)), "--ca-file", nginx.caCertificatePath]
        #expect(try await sync("enqueue", "POST", "\(nginx.baseURL.absoluteString)/first").status == 0)
        let refused = try await sync.run(common)
        #expect(refused.stdout.contains("dead 1") || refused.stdout.contains("failed 1"), "\(refused.stdout) \(refused.stderr)")
        let first = try #require(try await sync("--json", "show", "1").json() as? [String: Any])
        #expect("\(first)".contains("400"), "\(first)")

        #expect(try await sync("enqueue", "POST", "\(nginx.baseURL.absoluteString)/second").status == 0)
        let delivered = try await sync.run(common + ["--client-cert", nginx.clientCertificatePath, "--client-key", nginx.clientKeyPath])
        #expect(delivered.status == 0 && delivered.stdout.contains("delivered 1"), "\(delivered.stdout) \(delivered.stderr)")
        #expect(proxy.requestLines.filter { $0.hasPrefix("CONNECT 127.0.0.1:\(nginx.port) ") }.count >= 2, "\(proxy.log)")

        // The same from systemd's credentials, and no proxy: NO_PROXY=* in the environment.
        var fromCredentials = sync
        fromCredentials.environment = [
            "HTTPS_PROXY": proxy.url(), "NO_PROXY": "*",
            "CREDENTIALS_DIRECTORY": try Self.credentials(in: folder, [
                "courier-client-cert": try String(contentsOfFile: nginx.clientCertificatePath, encoding: .utf8),
                "courier-client-key": try String(contentsOfFile: nginx.clientKeyPath, encoding: .utf8),
            ]),
        ]
        #expect(try await sync("enqueue", "POST", "\(nginx.baseURL.absoluteString)/third").status == 0)
        let connects = proxy.requestLines.count
        let third = try await fromCredentials.run(["drain", "--no-reachability", "--ca-file", nginx.caCertificatePath])
        #expect(third.status == 0 && third.stdout.contains("delivered 1"), "\(third.stdout) \(third.stderr)")
        #expect(proxy.requestLines.count == connects, "NO_PROXY=* went around the proxy")

        let keyLines = try String(contentsOfFile: nginx.clientKeyPath, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for line in keyLines {
            try await Self.expectNowhere(String(line), queue: sync, folder: folder, outputs: [refused.stderr, delivered.stderr, third.stderr])
        }
        try await Self.expectNowhere(Self.password, queue: sync, folder: folder, outputs: [refused.stderr, delivered.stderr])
    }

    @Test("--trust-file: one origin's CA and client certificate; a bad line names the file and line (65)")
    func trustFile() async throws {
        let folder = try makeTemporaryFolder("sync-trust")
        defer { try? FileManager.default.removeItem(at: folder) }
        let nginx = try await NginxTLSServer.start(verifyingClients: true)
        defer { nginx.stop() }
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        let file = folder.appendingPathComponent("trust").path
        try """
        # the internal API
        \(nginx.baseURL.absoluteString) ca=\(nginx.caCertificatePath) client-cert=\(nginx.clientCertificatePath) client-key=\(nginx.clientKeyPath) system-trust=no

        """.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try await sync("enqueue", "POST", "\(nginx.baseURL.absoluteString)/x").status == 0)
        let drained = try await sync("drain", "--no-reachability", "--trust-file", file)
        #expect(drained.status == 0 && drained.stdout.contains("delivered 1"), "\(drained.stdout) \(drained.stderr)")

        try "# a comment, then a setting that does not exist\nhttps://b.example colour=blue\n".write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try await sync("drain", "--no-reachability", "--trust-file", file)
        #expect(bad.status == 65 && bad.stderr.contains("line 2") && bad.stderr.contains("colour"), "\(bad.status) \(bad.stderr)")
    }

    @Test("a client key open to its group or a symbolic link is refused as the keyring is (78); a missing file 66, a key that is not PEM 65, bad options 64, a bad proxy URL without its password")
    func refusals() async throws {
        let folder = try makeTemporaryFolder("sync-keys-refused")
        defer { try? FileManager.default.removeItem(at: folder) }
        let nginx = try await NginxTLSServer.start(verifyingClients: true)
        defer { nginx.stop() }
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        #expect(try await sync("enqueue", "POST", "https://127.0.0.1:9/x").status == 0)
        let key = folder.appendingPathComponent("client.key").path
        try FileManager.default.copyItem(atPath: nginx.clientKeyPath, toPath: key)
        let base = ["drain", "--no-reachability", "--client-cert", nginx.clientCertificatePath, "--client-key"]

        #expect(chmod(key, 0o640) == 0)
        let open = try await sync.run(base + [key])
        #expect(open.status == 78 && open.stderr.contains("group"), "\(open.status) \(open.stderr)")
        #expect(chmod(key, 0o600) == 0)
        let link = folder.appendingPathComponent("link.key").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: key)
        let linked = try await sync.run(base + [link])
        #expect(linked.status == 78 && linked.stderr.contains("symbolic link"), "\(linked.status) \(linked.stderr)")
        let missing = try await sync.run(base + [folder.appendingPathComponent("none.key").path])
        #expect(missing.status == 66, "\(missing.status) \(missing.stderr)")
        let garbage = folder.appendingPathComponent("garbage.key").path
        try "not a key\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        #expect(chmod(garbage, 0o600) == 0)
        let unparsed = try await sync.run(base + [garbage])
        #expect(unparsed.status == 65 && !unparsed.stderr.contains("not a key"), "\(unparsed.status) \(unparsed.stderr)")
        let alone = try await sync("drain", "--no-reachability", "--client-key", key)
        #expect(alone.status == 64, "\(alone.status) \(alone.stderr)")
        let nothingTrusted = try await sync("drain", "--no-reachability", "--no-system-trust")
        #expect(nothingTrusted.status == 64, "\(nothingTrusted.status) \(nothingTrusted.stderr)")
        let badProxy = try await sync("drain", "--no-reachability", "--proxy", "socks5://alice:hunter2@127.0.0.1:1080")
        #expect(badProxy.status == 64 && !badProxy.stderr.contains("hunter2"), "\(badProxy.status) \(badProxy.stderr)")
        var environment = sync
        environment.environment = ["HTTPS_PROXY": "ftp://bob:hunter2@proxy"]
        let badEnvironment = try await environment("drain", "--no-reachability")
        #expect(badEnvironment.status == 64 && badEnvironment.stderr.contains("$HTTPS_PROXY") && !badEnvironment.stderr.contains("hunter2"), "\(badEnvironment.status) \(badEnvironment.stderr)")
        // Nothing was sent, nothing lost.
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["pending"] as? Int == 1)
    }

    #if Brotli
    @Test("an answer with Content-Encoding: br is delivered (it was an error before brotli was built in)")
    func brotli() async throws {
        let folder = try makeTemporaryFolder("sync-br")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestHTTPServer.start()
        server.script("/br", headers: [HeaderField(name: "Content-Encoding", value: "br"), HeaderField(name: "Content-Type", value: "application/json")], body: BrotliFixture.compress(Data(#"{"ok":true}"#.utf8)))
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        #expect(try await sync("enqueue", "POST", server.url("/br").absoluteString).status == 0)
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 1"), "\(drained.stdout) \(drained.stderr)")
        #expect(server.requests.first?.values(of: "accept-encoding").first?.hasPrefix("br") == true)
        await server.shutdown()
    }
    #endif
}
