public import Foundation

/// Debian's tinyproxy on a loopback port, as an operator's egress proxy: plain HTTP requests in
/// absolute form, `CONNECT` tunnels to any port, and with ``start(credentials:)`` given, Basic
/// proxy authentication (407 without it). Its log (``requestLines``) says what went through it.
///
/// Needs `tinyproxy` (Debian: `apt-get install -y tinyproxy`; Tools/test installs it); the
/// Debian service is never started. ``stop()`` ends it and removes its directory.
public final class TinyproxyServer: Sendable {
    /// The proxy's port on 127.0.0.1.
    public let port: Int
    public let directory: URL
    private let process: ChildProcess

    /// `http://[user:password@]127.0.0.1:port`.
    public func url(credentials: (user: String, password: String)? = nil) -> String {
        "http://\(credentials.map { "\($0.user):\($0.password)@" } ?? "")127.0.0.1:\(port)"
    }

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts tinyproxy in the foreground and waits (at most 60 s) until it accepts connections.
    public static func start(credentials: (user: String, password: String)? = nil) async throws -> TinyproxyServer {
        let tinyproxy = try NginxTLSServer.executable("tinyproxy", hint: "apt-get install -y tinyproxy")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-tinyproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let reserved = try ReservedLoopbackPort()
        let port = reserved.port
        // No ConnectPort line: CONNECT is allowed to every port (the tests' servers are on
        // high ports). No UserName: it runs as whoever starts it (it says so in its log).
        var config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            LogFile "\(directory.path)/tinyproxy.log"
            LogLevel Connect
            PidFile "\(directory.path)/tinyproxy.pid"
            MaxClients 64
            Allow 127.0.0.1

            """
        if let credentials { config += "BasicAuth \(credentials.user) \(credentials.password)\n" }
        let file = directory.appendingPathComponent("tinyproxy.conf")
        try config.write(to: file, atomically: true, encoding: .utf8)
        reserved.release()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: tinyproxy)
        process.arguments = ["-d", "-c", file.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = TinyproxyServer(port: port, directory: directory, process: process)
        try await awaitListening(process, port: port, name: "tinyproxy", log: { server.log }, stop: server.stop)
        return server
    }

    /// Its whole log.
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("tinyproxy.log"), encoding: .utf8)) ?? ""
    }

    /// The request lines it received, in order: `GET http://127.0.0.1:8080/x HTTP/1.1` for a
    /// plain request, `CONNECT 127.0.0.1:8443 HTTP/1.1` for a tunnel.
    public var requestLines: [String] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "]: Request (file descriptor ") else { return nil }
            guard let colon = line[range.upperBound...].range(of: "): ") else { return nil }
            return String(line[colon.upperBound...])
        }
    }

    /// Ends tinyproxy and removes its directory.
    public func stop() {
        if process.isRunning { process.signal(SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }
}
