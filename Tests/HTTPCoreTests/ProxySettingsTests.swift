import Foundation
@testable import HTTPCore
import Testing

@Suite("Proxy settings: the environment and NO_PROXY as curl reads them")
struct ProxySettingsTests {
    @Test("NO_PROXY: names with their subdomains, a leading dot or *., addresses, CIDR ranges, ports, * for all", arguments: [
        // (list, host, port, bypassed)
        ("example.com", "example.com", 443, true),
        ("example.com", "api.example.com", 443, true),
        ("example.com", "notexample.com", 443, false),
        (".example.com", "example.com", 80, true),
        ("*.example.com", "a.b.example.com", 80, true),
        ("EXAMPLE.com", "Api.Example.COM.", 80, true),
        ("example.com:8443", "api.example.com", 8443, true),
        ("example.com:8443", "api.example.com", 443, false),
        ("localhost, 127.0.0.1", "127.0.0.1", 80, true),
        ("127.0.0.1", "127.0.0.2", 80, false),
        ("10.0.0.0/8", "10.20.30.40", 80, true),
        ("10.0.0.0/8", "11.0.0.1", 80, false),
        ("192.168.1.0/24:8080", "192.168.1.9", 8080, true),
        ("192.168.1.0/24:8080", "192.168.1.9", 80, false),
        ("::1", "[::1]", 80, true),
        ("[fd00::]/8", "fd12:3456::1", 443, true),
        ("[::1]:8080", "::1", 8080, true),
        ("[::1]:8080", "::1", 8081, false),
        ("10.0.0.0/8", "ten.example", 80, false),
        ("*", "anything.example", 1, true),
        ("a.example  b.example\tc.example", "b.example", 80, true),
        ("", "example.com", 80, false),
        (",,", "example.com", 80, false),
    ])
    func bypass(list: String, host: String, port: Int, bypassed: Bool) {
        #expect(ProxyBypass(list).matches(host: host, port: port) == bypassed)
    }

    @Test("the environment: https_proxy for https, http_proxy for http, all_proxy for either, lower case first, empty is unset")
    func environment() throws {
        #expect(try ProxySettings(environment: [:]) == nil)
        #expect(try ProxySettings(environment: ["HTTPS_PROXY": "", "no_proxy": "x"]) == nil)

        let both = try #require(try ProxySettings(environment: [
            "HTTPS_PROXY": "http://upper:3128", "https_proxy": "http://lower:3128", "HTTP_PROXY": "plain.example:8080", "NO_PROXY": ".internal",
        ]))
        #expect(both.https?.host == "lower")
        #expect(both.http == ProxyServer(host: "plain.example", port: 8080))
        #expect(both.server(for: URL(string: "https://api.example.com/x")!)?.host == "lower")
        #expect(both.server(for: URL(string: "https://api.internal/x")!) == nil)
        #expect(both.server(for: URL(string: "http://api.example.com/x")!)?.host == "plain.example")

        let all = try #require(try ProxySettings(environment: ["ALL_PROXY": "http://all.example:3128", "http_proxy": "http://web.example"]))
        #expect(all.https?.host == "all.example")
        #expect(all.http == ProxyServer(host: "web.example", port: 1080))

        let onlyHTTPS = try #require(try ProxySettings(environment: ["https_proxy": "http://p:1"]))
        #expect(onlyHTTPS.server(for: URL(string: "http://a.example")!) == nil)
    }

    @Test("a proxy URL: credentials percent-decoded, shown without the password; other schemes, paths and bad ports refused without the password")
    func servers() throws {
        let server = try ProxyServer(url: "http://alice:p%40ss%3Aword@[::1]:3128")
        #expect(server.host == "::1" && server.port == 3128)
        #expect(server.credentials == ProxyCredentials(username: "alice", password: "p@ss:word"))
        #expect(server.description == "http://alice@[::1]:3128")
        #expect(!"\(server) \(String(reflecting: server.credentials!))".contains("p@ss"))

        for bad in ["https://alice:hunter2@proxy:3128", "socks5://alice:hunter2@proxy", "http://alice:hunter2@proxy:3128/path", "http://alice:hunter2@proxy:99999", "http://alice:hunter2@"] {
            #expect(Comment(rawValue: bad)) { try ProxyServer(url: bad) } throws: { error in
                !"\(error)".contains("hunter2") && "\(error)".contains("<redacted>")
            }
        }
        #expect { try ProxySettings(environment: ["HTTPS_PROXY": "ftp://bob:hunter2@x"]) } throws: { error in
            "\(error)".contains("$HTTPS_PROXY") && !"\(error)".contains("hunter2")
        }
        #expect(try ProxyCredentials(line: "bob:a:b\n") == ProxyCredentials(username: "bob", password: "a:b"))
        #expect(throws: ProxyError.self) { try ProxyCredentials(line: "no-colon") }
    }

    @Test("a request's origin from its scheme and authority")
    func origins() {
        #expect(Origin(scheme: "HTTPS", authority: "API.example.com") == Origin("https://api.example.com"))
        #expect(Origin(scheme: "http", authority: "user:pw@example.com:8080")?.port == 8080)
        #expect(Origin(scheme: "https", authority: "[::1]:8443") == Origin("https://[::1]:8443"))
        #expect(Origin(scheme: "ftp", authority: "example.com") == nil)
        #expect(Origin(scheme: "http", authority: "example.com:port") == nil)
        #expect(Origin(scheme: "http", authority: nil) == nil)
    }
}
