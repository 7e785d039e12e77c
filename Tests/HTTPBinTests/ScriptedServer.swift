import Foundation
import TestSupport

/// A small Python `http.server` on loopback for what httpbin cannot do: 10 MiB bodies, a body
/// cut short, a garbage answer, a 3xx without `Location`, and TLS with a self-signed
/// certificate. One plain and one TLS instance are shared by the process and stopped with it.
struct ScriptedServer: Sendable {
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    let baseURL: URL

    /// The plain HTTP server.
    static func plain() async throws -> ScriptedServer { try await plainLaunch.value }

    /// The same server behind TLS with a fresh self-signed certificate no client trusts.
    static func selfSignedTLS() async throws -> ScriptedServer { try await tlsLaunch.value }

    private static let plainLaunch = Task<ScriptedServer, any Error> {
        let python = try await LoopbackPython.find(modules: ["http.server"])
        let port = try await LoopbackPython.start(python: python, script: script, name: "scripted-http", arguments: ["http"])
        return ScriptedServer(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    private static let tlsLaunch = Task<ScriptedServer, any Error> {
        let python = try await LoopbackPython.find(modules: ["http.server", "ssl"])
        let port = try await LoopbackPython.start(python: python, script: script, name: "scripted-tls", arguments: ["tls"])
        return ScriptedServer(baseURL: URL(string: "https://127.0.0.1:\(port)")!)
    }

    func url(_ path: String) -> URL { URL(string: baseURL.absoluteString + path)! }

    /// The byte at `index` of every body the server sends or checks: `index % 251`.
    static func patternByte(_ index: Int) -> UInt8 { UInt8(index % 251) }

    /// One period of the pattern (251 bytes), for ``TestPayload/periodic(_:offset:count:)``.
    static let patternPeriod = (0..<251).map { UInt8($0) }

    /// Routes:
    /// - `GET /bulk/N`: N pattern bytes, chunked, in 64 KiB chunks.
    /// - `PUT|POST /verify`: reads the body (Content-Length or chunked) and answers
    ///   `{"count": N, "pattern": true|false}`.
    /// - `GET /hang`: reads the request and never answers (for 20 s).
    /// - `GET /cut`: promises 100000 bytes, sends 10, closes.
    /// - `GET /garbage`: answers with bytes that are not HTTP, then closes.
    /// - `GET /moved-nowhere`: a 301 without `Location`, with a short body.
    private static let script = #"""
    import http.server, json, os, ssl, subprocess, sys, tempfile, threading, time

    log = open(sys.argv[1], "a")
    mode = sys.argv[2]
    PATTERN = bytes(i % 251 for i in range(251 * 261))  # 65511 bytes, a whole number of periods

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            log.write((fmt % args) + "\n"); log.flush()

        def do_GET(self):
            if self.path.startswith("/bulk/"):
                left = int(self.path.split("/")[2])
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while left > 0:
                    part = PATTERN[:min(left, len(PATTERN))]
                    self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                    left -= len(part)
                self.wfile.write(b"0\r\n\r\n")
            elif self.path == "/hang":
                time.sleep(20)
                self.close_connection = True
            elif self.path == "/cut":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"0123456789")
                self.wfile.flush()
                self.close_connection = True
            elif self.path == "/garbage":
                self.wfile.write(b"SURPRISE \x00\x01 not http at all\r\n\r\n")
                self.wfile.flush()
                self.close_connection = True
            elif self.path == "/moved-nowhere":
                body = b"gone"
                self.send_response(301)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.answer(200, {"path": self.path})

        def do_PUT(self):
            self.verify()

        def do_POST(self):
            self.verify()

        def verify(self):
            count, ok = 0, True
            for chunk in self.body_chunks():
                offset = count % 251
                repeats = (offset + len(chunk)) // len(PATTERN) + 1
                ok = ok and chunk == (PATTERN * repeats)[offset:offset + len(chunk)]
                count += len(chunk)
            self.answer(200, {"count": count, "pattern": ok})

        def body_chunks(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return
                    yield self.rfile.read(size)
                    self.rfile.readline()
            else:
                left = int(self.headers.get("Content-Length", "0"))
                while left > 0:
                    chunk = self.rfile.read(min(left, 1 << 16))
                    if not chunk:
                        return
                    left -= len(chunk)
                    yield chunk

        def answer(self, status, document):
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if mode == "tls":
        directory = tempfile.mkdtemp(prefix="courier-tls-")
        key, cert = os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, stdout=log, stderr=log)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.buffer.read()
    server.shutdown()
    """#
}
