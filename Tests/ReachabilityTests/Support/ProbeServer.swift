import TestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP server (Python's `http.server`) run with `ip netns exec` inside a namespace the
/// test created. Paths: `/generate_204` answers 204; `/portal` redirects (302) to `/login`;
/// `/page` answers 200 with an HTML page; `/login` is that page too.
final class ProbeServer: Sendable {
    static let port = 8080
    private let process: ChildProcess

    private static let script = """
    import http.server, sys
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == '/generate_204':
                self.send_response(204); self.end_headers()
            elif self.path == '/portal':
                self.send_response(302); self.send_header('Location', '/login'); self.send_header('Content-Length', '0'); self.end_headers()
            else:
                body = b'<html><body>Please log in</body></html>'
                self.send_response(200); self.send_header('Content-Type', 'text/html'); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H)
    print('ready', flush=True)
    server.serve_forever()
    """

    private init(process: ChildProcess) {
        self.process = process
    }

    /// Starts the server in `namespace`, bound to `address`, and waits (up to 5 s) until it listens.
    static func start(namespace: String, address: String) async throws -> ProbeServer {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: FileManager.default.isExecutableFile(atPath:)) ?? Self.which("python3") else {
            throw LabError("python3 is not installed (apt-get install python3); the probe tests serve HTTP with it")
        }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: try NetworkLab.ipTool())
        process.arguments = ["netns", "exec", namespace, python, "-c", Self.script, address, String(Self.port)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = ProbeServer(process: process)
        // "ready" on its first line; the read ends early if the server dies.
        let handle = output.fileHandleForReading
        let ready = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await onOwnThread { !handle.availableData.isEmpty } }
            group.addTask { try? await Task.sleep(for: .hangGuard); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard ready, process.isRunning else {
            server.stop()
            throw LabError("the python3 probe server did not start in namespace \(namespace)")
        }
        return server
    }

    /// Kills the server (SIGKILL, which nothing can block or catch). Its reaper thread reaps
    /// it; nothing waits here.
    func stop() {
        if process.isRunning { process.signal(SIGKILL) }
    }

    private static func which(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first(where: FileManager.default.isExecutableFile(atPath:))
    }
}
