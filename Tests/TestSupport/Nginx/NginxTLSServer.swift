public import Foundation
import NIOCore
import NIOPosix

/// nginx serving HTTPS on a loopback port with a certificate from a throwaway CA, for TLS tests.
///
/// ``start()`` makes a CA and a server certificate for `localhost` and `127.0.0.1` with
/// `openssl` in a temporary directory, writes a minimal `nginx.conf` (pid, logs and temp paths
/// in that directory, HTTP/2 offered through ALPN), and runs `nginx -g 'daemon off;'` as a child
/// process on a free port. Clients reject the certificate unless they trust ``caCertificatePath``.
/// ``stop()`` ends nginx and removes the directory.
///
/// Needs `nginx` (Debian: `apt-get install -y nginx`) and `openssl`; ``start()`` throws a
/// ``TestServerError`` naming what is missing.
///
/// | path | answer |
/// | --- | --- |
/// | `/` and anything else | 200, `{"tls":true}`, with `X-Protocol: HTTP/1.1` or `HTTP/2.0` |
public final class NginxTLSServer: Sendable {
    /// The HTTPS port on 127.0.0.1.
    public let port: Int
    /// The PEM file of the CA that signed the server's certificate (and the client's).
    public let caCertificatePath: String
    /// A client certificate the CA signed, and its key (mode 0600), for ``start(verifyingClients:)``.
    public var clientCertificatePath: String { directory.appendingPathComponent("client.pem").path }
    public var clientKeyPath: String { directory.appendingPathComponent("client.key").path }
    /// The temporary directory holding keys, certificates, config and logs.
    public let directory: URL
    private let process: ChildProcess

    /// `https://127.0.0.1:port`.
    public var baseURL: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// The body nginx answers with.
    public static let body = #"{"tls":true}"#

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.caCertificatePath = directory.appendingPathComponent("ca.pem").path
        self.process = process
    }

    /// Makes the certificates and config, starts nginx and waits (at most 60 s) until it accepts
    /// connections. `verifyingClients`: nginx asks for a client certificate signed by the CA
    /// (`ssl_verify_client on`) and answers 400 to a request that comes without one.
    public static func start(verifyingClients: Bool = false) async throws -> NginxTLSServer {
        let nginx = try executable("nginx", hint: "apt-get install -y nginx")
        let openssl = try executable("openssl", hint: "apt-get install -y openssl")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await makeCertificates(openssl: openssl, in: directory)
        let port = try await freePort()
        let config = directory.appendingPathComponent("nginx.conf")
        try configuration(port: port, directory: directory.path, verifyingClients: verifyingClients).write(to: config, atomically: true, encoding: .utf8)

        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", directory.path, "-c", config.path, "-e", directory.appendingPathComponent("error.log").path, "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = NginxTLSServer(port: port, directory: directory, process: process)
        try await awaitListening(process, port: port, name: "nginx", log: {
            (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        }, stop: server.stop)
        return server
    }

    /// Ends nginx (SIGKILL; its reaper thread reaps it) and removes the temporary directory.
    public func stop() {
        if process.isRunning {
            // nginx runs as one process (`master_process off`), so SIGKILL leaves nothing behind.
            process.signal(SIGKILL)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func configuration(port: Int, directory: String, verifyingClients: Bool) -> String {
        let verification = verifyingClients ? "ssl_client_certificate \(directory)/ca.pem;\n            ssl_verify_client on;" : ""
        return """
        worker_processes 1;
        master_process off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log;
        events { worker_connections 64; }
        http {
            access_log \(directory)/access.log;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(directory)/server.pem;
                ssl_certificate_key \(directory)/server.key;
                \(verification)
                location / {
                    default_type application/json;
                    add_header X-Protocol $server_protocol always;
                    return 200 '\(body)';
                }
            }
        }

        """
    }

    private static func makeCertificates(openssl: String, in directory: URL) async throws {
        let path = directory.path
        try """
        basicConstraints=CA:FALSE
        keyUsage=critical,digitalSignature,keyEncipherment
        extendedKeyUsage=serverAuth
        subjectAltName=DNS:localhost,IP:127.0.0.1

        """.write(to: directory.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await run(openssl, ["req", "-x509"] + ec + ["-keyout", "\(path)/ca.key", "-out", "\(path)/ca.pem", "-days", "2",
                          "-subj", "/CN=Courier Test CA",
                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try await run(openssl, ["req"] + ec + ["-keyout", "\(path)/server.key", "-out", "\(path)/server.csr", "-subj", "/CN=localhost"])
        try await run(openssl, ["x509", "-req", "-in", "\(path)/server.csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca.key",
                          "-CAcreateserial", "-out", "\(path)/server.pem", "-days", "2", "-extfile", "\(path)/server.ext"])
        try """
        basicConstraints=CA:FALSE
        keyUsage=critical,digitalSignature
        extendedKeyUsage=clientAuth

        """.write(to: directory.appendingPathComponent("client.ext"), atomically: true, encoding: .utf8)
        try await run(openssl, ["req"] + ec + ["-keyout", "\(path)/client.key", "-out", "\(path)/client.csr", "-subj", "/CN=courier-sync"])
        try await run(openssl, ["x509", "-req", "-in", "\(path)/client.csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca.key",
                          "-CAcreateserial", "-out", "\(path)/client.pem", "-days", "2", "-extfile", "\(path)/client.ext"])
        _ = chmod("\(path)/client.key", 0o600)
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let result = try await runTool(executable, arguments)
        guard result.status == 0 else {
            throw TestServerError("\(executable) \(arguments.joined(separator: " ")) failed: \(result.errorText)")
        }
    }

    /// The full path of `name` in `PATH` or the sbin directories.
    static func executable(_ name: String, hint: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin"]
        for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        throw TestServerError("\(name) is not installed (\(hint))")
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago.
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port
        try? await channel.close()
        guard let port else { throw TestServerError("no free port") }
        return port
    }
}
