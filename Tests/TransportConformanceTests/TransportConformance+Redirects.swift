import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

extension TransportConformance {
    @Test("relative and absolute redirect chains are followed for every redirect status", arguments: TransportFactories.all)
    func redirectChains(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            for status in [301, 302, 303, 307, 308] {
                for kind in ["redirect", "absolute-redirect"] {
                    let response = try await harness.client.send(Request<Data>.get("/\(kind)/3?status=\(status)"))
                    #expect(response.status == .ok)
                    #expect(try harness.echo(response).path == "/echo")
                    #expect(response.metrics.redirects == 3)
                }
            }
        }
    }

    @Test("Authorization and Cookie are dropped when a redirect changes the host", arguments: TransportFactories.all)
    func credentialsDroppedOnHostChange(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let headers: HTTPFields = [.authorization: "Bearer secret", .cookie: "session=1", HTTPField.Name("X-Keep")!: "yes"]
            let otherHost = harness.server.url("/echo", host: "localhost").absoluteString
            let away = try await harness.client.send(Request<Data>.get("/redirect-to", query: [URLQueryItem(name: "url", value: otherHost)], headers: headers))
            let awayEcho = try harness.echo(away)
            #expect(awayEcho.values(of: "Host").first?.hasPrefix("localhost") == true)
            #expect(awayEcho.values(of: "Authorization").isEmpty)
            #expect(awayEcho.values(of: "Cookie").isEmpty)
            #expect(awayEcho.values(of: "X-Keep") == ["yes"])

            let sameHost = try await harness.client.send(Request<Data>.get("/redirect-to", query: [URLQueryItem(name: "url", value: "/echo")], headers: headers))
            let sameEcho = try harness.echo(sameHost)
            #expect(sameEcho.values(of: "Authorization") == ["Bearer secret"])
            #expect(sameEcho.values(of: "Cookie") == ["session=1"])
        }
    }

    @Test("303 turns a POST into a GET without a body; 307 and 308 keep method and body", arguments: TransportFactories.all)
    func redirectMethods(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let body = Data(repeating: 7, count: 5000)
            let seeOther = try harness.echo(try await harness.client.send(Request<Data>.post("/redirect-to?status=303&url=/echo", body: .data(body))))
            #expect(seeOther.method == "GET")
            #expect(seeOther.bodySize == 0)
            for status in [307, 308] {
                let kept = try harness.echo(try await harness.client.send(Request<Data>.post("/redirect-to?status=\(status)&url=/echo", body: .data(body))))
                #expect(kept.method == "POST")
                #expect(kept.bodySize == body.count)
                #expect(kept.bodyCRC32 == CRC32.checksum(body))
            }
            let streamed = RequestContent.stream(length: 100_000) { ByteStream(PayloadChunks(count: 100_000)) }
            let replayed = try harness.echo(try await harness.client.send(Request<Data>.put("/redirect-to?status=307&url=/echo", body: streamed)))
            #expect(replayed.method == "PUT")
            #expect(replayed.bodyCRC32 == TestPayload.crc32(count: 100_000))
        }
    }

    @Test("more redirects than the limit fail with tooManyRedirects", arguments: TransportFactories.all)
    func tooManyRedirects(_ factory: TransportFactory) async throws {
        try await Harness.run(factory, configure: { $0.maxRedirects = 3 }) { harness in
            await expectNetworkError("tooManyRedirects(limit: 3)", {
                _ = try await harness.client.send(Request<Data>.get("/redirect/5"))
            }, matches: { error in
                if case .tooManyRedirects(3, _) = error { return true }
                return false
            })
        }
    }
}
