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
    private let process: Process

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

    /// Starts the server in `namespace`, bound to `address`, and waits (up to 5 s) until it listens.
    init(namespace: String, address: String) throws {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: FileManager.default.isExecutableFile(atPath:)) ?? Self.which("python3") else {
            throw LabError("python3 is not installed (apt-get install python3); the probe tests serve HTTP with it")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: try NetworkLab.ipTool())
        process.arguments = ["netns", "exec", namespace, python, "-c", Self.script, address, String(Self.port)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = DispatchSemaphore(value: 0)
        let handle = output.fileHandleForReading
        DispatchQueue.global().async {
            _ = handle.availableData
            ready.signal()
        }
        guard ready.wait(timeout: .now() + 5) == .success, process.isRunning else {
            stop()
            throw LabError("the python3 probe server did not start in namespace \(namespace)")
        }
    }

    /// Kills the server (SIGKILL: the test runner's blocked-signal mask is inherited by
    /// children, so a SIGTERM may never be delivered) and waits for it.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    private static func which(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first(where: FileManager.default.isExecutableFile(atPath:))
    }
}
