import AsyncHTTPClient
@testable import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import NIOHTTPCompression
import NIOSSL
import Testing
import TestSupport

/// An operator's host through the library: Debian's tinyproxy as the egress proxy (with and
/// without credentials, `NO_PROXY` around it, `CONNECT` to an https origin), nginx with a private
/// CA asking for a client certificate, and a server answering `br`.
@Suite("AsyncHTTPClientTransport on an operator's host", .serialized)
struct OperatorHostTests {
    static let alice = (user: "alice", password: "pr0xy-s3cr3t")

    @Test("an http origin through the proxy (AsyncHTTPClient tunnels it by CONNECT too), with the proxy's credentials when it asks for them")
    func httpThroughProxy() async throws {
        let server = try await TestHTTPServer.start()
        for credentials in [nil, Self.alice] {
            let proxy = try await TinyproxyServer.start(credentials: credentials)
            let transport = AsyncHTTPClientTransport(configuration: .init(proxy: ProxySettings(all: try ProxyServer(url: proxy.url(credentials: credentials)))))
            let client = APIClient(baseURL: server.baseURL, transport: transport)
            let response = try await client.send(Request<Data>.get("/echo?via=\(credentials == nil ? "open" : "auth")"))
            #expect(response.status == .ok)
            #expect(proxy.requestLines == ["CONNECT 127.0.0.1:\(server.port) HTTP/1.1"], "\(proxy.log)")
            // The proxy took its credentials off: the origin never sees them.
            let seen = try #require(await server.waitForRequest(path: "/echo"))
            #expect(seen.values(of: "proxy-authorization").isEmpty)
            try await transport.shutdown()
            proxy.stop()
        }
        await server.shutdown()
    }

    @Test("a proxy that asks for credentials and gets wrong ones: a cannotConnect failure naming no password, for http and https")
    func wrongCredentials() async throws {
        let proxy = try await TinyproxyServer.start(credentials: Self.alice)
        defer { proxy.stop() }
        let server = try await TestHTTPServer.start()
        let nginx = try await NginxTLSServer.start()
        defer { nginx.stop() }
        var configuration = AsyncHTTPClientTransport.Configuration(proxy: ProxySettings(all: try ProxyServer(url: proxy.url(credentials: ("alice", "wrong-guess")))))
        configuration.trustRootCertificates(inPEMFile: nginx.caCertificatePath)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        for base in [server.baseURL, nginx.baseURL] {
            await #expect {
                _ = try await APIClient(baseURL: base, transport: transport).send(Request<Data>.get("/"))
            } throws: { error in
                guard case NetworkError.transport(let failure) = error else { return false }
                return failure.kind == .cannotConnect && failure.message.contains("proxy") && !"\(error)".contains("wrong-guess")
            }
        }
        #expect(server.requests.isEmpty, "nothing reached the origin")
        try await transport.shutdown()
        await server.shutdown()
    }

    @Test("an https origin through the proxy's CONNECT tunnel, TLS end to end with a private CA")
    func httpsThroughConnect() async throws {
        let proxy = try await TinyproxyServer.start(credentials: Self.alice)
        defer { proxy.stop() }
        let nginx = try await NginxTLSServer.start()
        defer { nginx.stop() }
        var configuration = AsyncHTTPClientTransport.Configuration(proxy: ProxySettings(all: try ProxyServer(url: proxy.url(credentials: Self.alice))))
        configuration.trustRootCertificates(inPEMFile: nginx.caCertificatePath)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let response = try await APIClient(baseURL: nginx.baseURL, transport: transport).send(Request<Data>.get("/"))
        #expect(response.status == .ok)
        #expect(String(decoding: response.body, as: UTF8.self) == NginxTLSServer.body)
        #expect(proxy.requestLines.contains { $0.hasPrefix("CONNECT 127.0.0.1:\(nginx.port) ") }, "\(proxy.log)")
        try await transport.shutdown()
    }

    @Test("NO_PROXY: a host it names goes directly, another through the proxy; * sends everything directly")
    func bypass() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let server = try await TestHTTPServer.start()
        let settings = try #require(try ProxySettings(environment: ["HTTP_PROXY": proxy.url(), "NO_PROXY": "example.com, localhost:\(server.port)"]))
        let transport = AsyncHTTPClientTransport(configuration: .init(proxy: settings))
        _ = try await APIClient(baseURL: server.url("/", host: "localhost"), transport: transport).send(Request<Data>.get("/echo?direct"))
        _ = try await APIClient(baseURL: server.url("/", host: "127.0.0.1"), transport: transport).send(Request<Data>.get("/echo?proxied"))
        #expect(proxy.requestLines.count == 1)
        #expect(proxy.requestLines == ["CONNECT 127.0.0.1:\(server.port) HTTP/1.1"], "\(proxy.requestLines)")
        #expect(server.requests.map(\.target) == ["/echo?direct", "/echo?proxied"])
        try await transport.shutdown()

        let everything = AsyncHTTPClientTransport(configuration: .init(proxy: ProxySettings(all: try ProxyServer(url: proxy.url()), bypass: ProxyBypass("*"))))
        _ = try await APIClient(baseURL: server.baseURL, transport: everything).send(Request<Data>.get("/echo?star"))
        #expect(proxy.requestLines.count == 1)
        try await everything.shutdown()
        await server.shutdown()
    }

    @Test("nginx asking for a client certificate: refused without one (400), delivered with it; per origin too")
    func clientCertificate() async throws {
        let nginx = try await NginxTLSServer.start(verifyingClients: true)
        defer { nginx.stop() }
        var without = AsyncHTTPClientTransport.Configuration()
        without.trustRootCertificates(inPEMFile: nginx.caCertificatePath)
        let refusing = AsyncHTTPClientTransport(configuration: without)
        await #expect {
            _ = try await APIClient(baseURL: nginx.baseURL, transport: refusing).send(Request<Data>.get("/"))
        } throws: { ($0 as? NetworkError)?.status?.code == 400 }
        try await refusing.shutdown()

        var with = without
        try with.presentClientCertificate(certificatePEMFile: nginx.clientCertificatePath, keyPEMFile: nginx.clientKeyPath)
        let presenting = AsyncHTTPClientTransport(configuration: with)
        let delivered = try await APIClient(baseURL: nginx.baseURL, transport: presenting).send(Request<Data>.get("/"))
        #expect(delivered.status == .ok)
        try await presenting.shutdown()

        // Only this origin presents the certificate (and trusts the CA alone): another origin
        // keeps the defaults.
        var originTLS = AsyncHTTPClientTransport.Configuration.defaultTLS
        try originTLS.presentClientCertificate(certificatePEMFile: nginx.clientCertificatePath, keyPEMFile: nginx.clientKeyPath)
        originTLS.trustRoots = .file(nginx.caCertificatePath)
        let origin = try #require(Origin(nginx.baseURL))
        let perOrigin = AsyncHTTPClientTransport(configuration: .init(tlsByOrigin: [origin: originTLS]))
        #expect(try await APIClient(baseURL: nginx.baseURL, transport: perOrigin).send(Request<Data>.get("/")).status == .ok)
        let other = try #require(URL(string: "https://localhost:\(nginx.port)"))
        await #expect(throws: NetworkError.self) { _ = try await APIClient(baseURL: other, transport: perOrigin).send(Request<Data>.get("/")) }
        try await perOrigin.shutdown()
    }

    @Test("a client key or certificate that cannot be read is a clear error naming the file, never the key")
    func unreadableKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("client.key").path
        try "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".write(toFile: key, atomically: true, encoding: .utf8)
        var configuration = AsyncHTTPClientTransport.Configuration()
        #expect {
            try configuration.presentClientCertificate(certificatePEMFile: "/nonexistent/client.pem", keyPEMFile: key)
        } throws: { "\($0)".contains("/nonexistent/client.pem") }
    }

    #if Brotli
    @Test("a br body is decoded as it arrives; Accept-Encoding names br first")
    func brotli() async throws {
        let server = try await TestHTTPServer.start()
        let plain = BrotliFixture.text(300_000)
        server.script("/br", headers: [HeaderField(name: "Content-Encoding", value: "br"), HeaderField(name: "Content-Type", value: "text/plain")], body: BrotliFixture.compress(plain))
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        let response = try await client.send(Request<Data>.get("/br"))
        #expect(response.body == plain)
        #expect(await server.waitForRequest(path: "/br")?.values(of: "accept-encoding") == ["br, deflate, gzip"])
        try await transport.shutdown()
        await server.shutdown()
    }

    @Test("a brotli bomb is refused as a gzip bomb is; a body that is not brotli, or ends early, fails as invalidResponse")
    func brotliFailures() async throws {
        let server = try await TestHTTPServer.start()
        let encoded = BrotliFixture.compress(BrotliFixture.text(100_000))
        server.script("/bomb", headers: [HeaderField(name: "Content-Encoding", value: "br")], body: BrotliFixture.bomb)
        server.script("/garbage", headers: [HeaderField(name: "Content-Encoding", value: "br")], body: Data("this is not brotli at all".utf8))
        server.script("/truncated", headers: [HeaderField(name: "Content-Encoding", value: "br")], body: encoded.prefix(encoded.count / 2))
        server.script("/trailing", headers: [HeaderField(name: "Content-Encoding", value: "br")], body: encoded + Data("extra".utf8))
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        for path in ["/bomb", "/garbage", "/truncated", "/trailing"] {
            await #expect(Comment(rawValue: path)) {
                _ = try await client.send(Request<Data>.get(path))
            } throws: { error in
                guard case NetworkError.transport(let failure) = error else { return false }
                return failure.kind == .invalidResponse
            }
        }
        // The bomb was refused before it grew: about 25 times its size, not 64 MiB.
        #expect(BrotliFixture.bomb.count < 1024)
        // A limit of none lets the whole 64 MiB through.
        let unlimited = AsyncHTTPClientTransport(configuration: .init(decompression: .enabled(limit: .none)))
        let whole = try await unlimited.send(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/bomb"), body: nil, timeout: nil)
        var decoded = 0
        for try await chunk in whole.body {
            #expect(chunk.count <= BrotliBodyReader.chunkSize)
            decoded += chunk.count
        }
        #expect(decoded == 64 << 20)
        try await unlimited.shutdown()
        try await transport.shutdown()
        await server.shutdown()
    }

    @Test("the decompression limit is read from the configuration: size, ratio, none")
    func limits() {
        #expect(DecodingLimit(.size(10)) == .size(10))
        #expect(DecodingLimit(.ratio(7)) == .ratio(7))
        #expect(DecodingLimit(.none) == .none)
        #expect(DecodingLimit(.ratio(25)).isExceeded(encoded: 10, decoded: 251))
        #expect(!DecodingLimit(.ratio(25)).isExceeded(encoded: 10, decoded: 250))
    }
    #else
    @Test("built without the Brotli trait, a br body is refused and Accept-Encoding does not name it")
    func brotliNotBuilt() async throws {
        let server = try await TestHTTPServer.start()
        server.script("/br", headers: [HeaderField(name: "Content-Encoding", value: "br")], body: Data([0x0b, 0x00, 0x80, 0x61, 0x03]))
        let transport = AsyncHTTPClientTransport()
        await #expect(throws: NetworkError.self) { _ = try await APIClient(baseURL: server.baseURL, transport: transport).send(Request<Data>.get("/br")) }
        #expect(await server.waitForRequest(path: "/br")?.values(of: "accept-encoding") == ["deflate, gzip"])
        try await transport.shutdown()
        await server.shutdown()
    }
    #endif
}
