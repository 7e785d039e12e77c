import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfflineQueue
import QueueConsole
import Testing

@Suite("QueueConsole safety")
struct ConsoleSafetyTests {
    @Test func authenticationBasicAndBearer() async throws {
        try await ConsoleFixture.with { _, client in
            let none = try await client.send(.get, "/", as: nil)
            #expect(none.status == .unauthorized)
            #expect(none.headers[.wwwAuthenticate]?.hasPrefix("Basic realm=") == true)
            #expect(try await client.send(.get, "/", as: Auth.basic("admin", "wrong")).status == .unauthorized)
            #expect(try await client.send(.get, "/", as: Auth.basic("nobody", "secret")).status == .unauthorized)
            #expect(try await client.send(.get, "/", as: "Bearer wrong").status == .unauthorized)
            #expect(try await client.send(.get, "/", as: Auth.admin).status == .ok)
            #expect(try await client.send(.get, "/", as: Auth.viewer).status == .ok)
            #expect(try await client.send(.get, "/", as: Auth.bearer).status == .ok)
            #expect(try await client.send(.post, "/pause", as: Auth.bearer, json: true).status == .ok)
            #expect(try await client.send(.post, "/pause", as: nil).status == .unauthorized)
        }
    }

    @Test func anonymousAccessOnlyThroughALoopbackHostName() async throws {
        let fixture = try ConsoleFixture()
        let console = QueueConsole(queue: fixture.queue, users: try ConsoleUsers(parsing: ""), countsMaxAge: .zero, anonymous: .admin)
        do {
            try await Application(router: console.router()).test(.router) { (client: any TestClientProtocol) async throws in
                for host in ["localhost:9090", "127.0.0.1:9090", "127.1.2.3", "[::1]:9090"] {
                    #expect(try await client.send(.get, "/", as: nil, headers: [HTTPField.Name("Host")!: host]).status == .ok, "\(host)")
                }
                #expect(try await client.send(.post, "/pause", as: nil, json: true, headers: [HTTPField.Name("Host")!: "localhost:9090"]).status == .ok)
                for host in ["evil.example:9090", "127.0.0.1.evil.example", "[::2]:9090"] {
                    #expect(try await client.send(.get, "/", as: nil, headers: [HTTPField.Name("Host")!: host]).status == .forbidden, "\(host)")
                }
                // Credentials are still checked: there is no user to match them.
                #expect(try await client.send(.get, "/", as: Auth.admin, headers: [HTTPField.Name("Host")!: "localhost"]).status == .unauthorized)
            }
        } catch {
            await fixture.close()
            throw error
        }
        await fixture.close()
    }

    @Test func readOnlyUsersGet403OnChangesAndSeeNoForms() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead = try await fixture.enqueue("/missing")
            try await fixture.drain()
            for path in ["/entries/\(dead)/retry", "/entries/\(dead)/discard", "/pause", "/purge-delivered", "/bulk/discard", "/no-such-route"] {
                #expect(try await client.send(.post, path, as: Auth.viewer, form: "id=\(dead)").status == .forbidden)
            }
            #expect(try await client.send(.delete, "/entries/\(dead)", as: Auth.viewer).status == .forbidden)
            #expect(try await fixture.queue.entry(dead)?.state == .dead)
            #expect(try await fixture.queue.pauses().pauses.isEmpty)
            for path in ["/", "/entries", "/entries/\(dead)"] {
                let html = try await client.send(.get, path, as: Auth.viewer).text
                #expect(!html.contains("<form method=\"post\""), "\(path)")
                #expect(!html.contains("type=\"checkbox\""))
                let admin = try await client.send(.get, path, as: Auth.admin).text
                #expect(admin.contains("<form method=\"post\""), "\(path)")
            }
        }
    }

    @Test func crossSitePostsAreRefusedAndChangeNothing() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead = try await fixture.enqueue("/missing")
            try await fixture.drain()
            let crossSite: [HTTPFields] = [
                [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"],
                [HTTPField.Name("Sec-Fetch-Site")!: "same-site"],
                [HTTPField.Name("Origin")!: "https://evil.example"],
                [HTTPField.Name("Origin")!: "null"],
            ]
            for headers in crossSite {
                #expect(try await client.send(.post, "/entries/\(dead)/discard", headers: headers).status == .forbidden)
                #expect(try await client.send(.post, "/pause", headers: headers).status == .forbidden)
            }
            #expect(try await fixture.queue.entry(dead) != nil)
            #expect(try await fixture.queue.pauses().pauses.isEmpty)
            // Same origin, a request typed in, and a client that is no browser pass.
            #expect(try await client.send(.post, "/pause", headers: [HTTPField.Name("Sec-Fetch-Site")!: "same-origin"]).status == .seeOther)
            #expect(try await client.send(.post, "/resume", headers: [HTTPField.Name("Origin")!: "http://localhost"]).status == .seeOther)
            #expect(try await client.send(.post, "/pause").status == .seeOther)
            // A cross-site GET is a link: it passes.
            #expect(try await client.send(.get, "/", headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"]).status == .ok)
        }
    }

    @Test func securityHeadersOnEveryResponse() async throws {
        try await ConsoleFixture.with { fixture, client in
            let id = try await fixture.enqueue()
            let responses = [
                try await client.send(.get, "/"), try await client.send(.get, "/", json: true),
                try await client.send(.get, "/entries/\(id)"), try await client.send(.get, "/healthz", as: nil),
                try await client.send(.get, "/", as: nil), try await client.send(.post, "/pause", as: Auth.viewer),
                try await client.send(.get, "/entries/99999"), try await client.send(.get, "/no-such-page"),
                try await client.send(.post, "/pause", headers: [HTTPField.Name("Origin")!: "https://evil.example"]),
                try await client.send(.post, "/resume", form: ""),
            ]
            for response in responses {
                #expect(response.headers[HTTPField.Name("Content-Security-Policy")!] == "default-src 'self'; form-action 'self'; frame-ancestors 'none'", "\(response.status)")
                #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            }
        }
    }

    @Test func valuesFromTheQueueAreEscaped() async throws {
        try await ConsoleFixture.with { fixture, client in
            let hostile = #""><img src=x onerror=alert(1)><script>alert(2)</script>"#
            let id = try await fixture.queue.enqueue(
                method: "POST", url: "https://api.example.com/missing?q=%3Cscript%3E",
                headers: [("X-Note", hostile)], name: "<script>alert(4)</script>",
                options: EnqueueOptions(group: hostile)
            ).id
            let js = try await fixture.queue.enqueue(method: "GET", url: "https://api.example.com/x?next=javascript:alert(5)", name: "javascript:alert(6)").id
            try await fixture.drain()
            _ = try await fixture.queue.pause(group: hostile)
            for path in ["/", "/entries", "/entries?group=" + hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, "/entries/\(id)", "/entries/\(js)", "/?notice=%3Cscript%3Ealert(7)%3C%2Fscript%3E"] {
                let html = try await client.send(.get, path).text
                #expect(!html.lowercased().contains("<script"), "\(path)")
                // No tag has an onerror attribute: attribute values (where escaped text may say
                // "onerror=") cannot close early, as every `"` in them is escaped.
                let tags = html.replacing(/"[^"]*"/, with: "\"\"")
                #expect(tags.firstMatch(of: /<[^>]*onerror/) == nil, "\(path)")
                #expect(!html.contains("<img"), "\(path)")
                #expect(!html.contains(#"href="javascript:"#) && !html.contains(#"action="javascript:"#), "\(path)")
            }
            let detail = try await client.send(.get, "/entries/\(id)").text
            #expect(detail.contains("&lt;script&gt;alert(4)&lt;/script&gt;"))
            #expect(detail.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"))
        }
    }

    @Test func everyLinkFormAndAssetCarriesThePrefix() async throws {
        try await ConsoleFixture.with(prefix: "/queue/") { fixture, client in
            let dead = try await fixture.enqueue("/missing", group: "g")
            try await fixture.drain()
            for _ in 0..<3 { try await fixture.enqueue() }
            _ = try await fixture.queue.pause(group: "g")
            #expect(try await client.send(.get, "/").status == .notFound)
            #expect(try await client.send(.get, "/queue/healthz", as: nil).status == .ok)
            for path in ["/queue/", "/queue/entries?limit=2", "/queue/entries/\(dead)"] {
                let response = try await client.send(.get, path)
                #expect(response.status == .ok, "\(path)")
                let html = response.text
                let targets = html.matches(of: /(?:href|action|formaction)="([^"]*)"/).map { String($0.output.1) }
                #expect(!targets.isEmpty)
                for target in targets { #expect(target.hasPrefix("/queue/"), "\(path): \(target)") }
            }
            let redirect = try await client.send(.post, "/queue/entries/\(dead)/retry")
            #expect(redirect.headers[.location]?.hasPrefix("/queue/entries/\(dead)?notice=") == true)
            // The notice shows on the page the console redirected to, and only with its signature.
            let location = try #require(redirect.headers[.location])
            #expect(try await client.send(.get, location).text.contains(#"<p class="notice">retried 1</p>"#))
            for forged in [location.replacing("retried%201", with: "sign%20in%20at%20evil.example"), unsigned(location)!, location + "A"] {
                #expect(!(try await client.send(.get, forged).text.contains(#"<p class="notice">"#)), "\(forged)")
            }
            #expect(try await client.send(.post, "/queue/pause", as: Auth.viewer).status == .forbidden)
        }
    }

    @Test func credentialsFileParsesAndRefusesBadLines() throws {
        let users = try ConsoleUsers(parsing: ConsoleFixture.users)
        #expect(!users.isEmpty)
        #expect(throws: ConsoleCredentialsError(line: 2)) { try ConsoleUsers(parsing: "\nalice owner sha256$00\n") }
        #expect(throws: ConsoleCredentialsError(line: 1)) { try ConsoleUsers(parsing: "alice admin plain-password") }
        let line = ConsoleUsers.line(name: "ops", role: .read, password: "pw", iterations: 10)
        #expect(line.hasPrefix("ops read pbkdf2-sha256$10$"))
        #expect(ConsoleUsers.line(name: "ci", role: .admin, token: "abc") == "ci admin sha256$ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
