import BenchSupport
import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Plugins

/// `--overhead`: the CPU cost of `APIClient` alone, over a transport that answers at once with
/// the same body, against decoding that body directly. No network, one task.
enum Overhead {
    struct Canned: Transport {
        let body: Data
        func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
            TransportResponse(head: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json", .contentLength: String(self.body.count)]), body: ByteStream(data: self.body))
        }
    }

    static func run(body: Data, iterations: Int) async throws {
        let client = APIClient(baseURL: URL(string: "http://127.0.0.1:1")!, transport: Canned(body: body))
        // The plugins pair's five plugins and two interceptors, over the instant transport.
        let plugged = PluginsPair.plugged(client.configuration)
        let pluggedClient = APIClient(configuration: plugged, transport: client.transport)
        let voidCall = Request<Void>.get("/page")
        // OVERHEAD_EACH=1: each plugin and interceptor of the stack alone, µs per call above none.
        if ProcessInfo.processInfo.environment["OVERHEAD_EACH"] == "1" {
            let rounds = iterations * 20
            func time(_ each: APIClient) async throws -> Double {
                for _ in 0..<1_000 { try await each.send(voidCall) }
                let start = ContinuousClock.now
                for _ in 0..<rounds { try await each.send(voidCall) }
                let elapsed = ContinuousClock.now - start
                return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(rounds)
            }
            for _ in 1...2 {
                let none = try await time(client)
                var line = String(format: "none %.2f µs/call;", none)
                for (index, plugin) in plugged.plugins.enumerated() {
                    var one = client.configuration
                    one.plugins = [plugin]
                    line += String(format: " plugin %d +%.2f;", index, try await time(APIClient(configuration: one, transport: client.transport)) - none)
                }
                for (index, interceptor) in plugged.interceptors.enumerated() {
                    var one = client.configuration
                    one.interceptors = [interceptor]
                    line += String(format: " interceptor %d +%.2f;", index, try await time(APIClient(configuration: one, transport: client.transport)) - none)
                }
                print(line + String(format: " all +%.2f", try await time(pluggedClient) - none))
            }
            return
        }
        for (name, each) in [("no plugins", client), ("5 plugins + 2 interceptors", pluggedClient)] {
            let rounds = ProcessInfo.processInfo.environment["OVERHEAD_PLUGGED"] == "1" ? iterations * 50 : iterations * 5
            if ProcessInfo.processInfo.environment["OVERHEAD_PLUGGED"] == "1" && each === client { continue }
            let start = ContinuousClock.now
            for _ in 0..<rounds { try await each.send(voidCall) }
            print("APIClient.send(Request<Void>), \(name), over an instant transport: \(perCall(ContinuousClock.now - start, rounds)) µs/call")
        }
        if ProcessInfo.processInfo.environment["OVERHEAD_PLUGGED"] == "1" { return }
        let request = Request<Page>.get("/page")
        let decoder = JSONDecoder()
        for _ in 0..<1000 { _ = try await client.model(request, as: Page.self) }
        let clock = ContinuousClock()
        var start = clock.now
        for _ in 0..<iterations { _ = try decoder.decode(Page.self, from: body) }
        let decodeOnly = clock.now - start
        start = clock.now
        for _ in 0..<iterations { _ = try await client.model(request, as: Page.self) }
        let throughClient = clock.now - start
        start = clock.now
        for _ in 0..<iterations { _ = try await client.transport.send(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/page"), body: nil, timeout: nil) }
        let transportOnly = clock.now - start
        let decodeVariant = Variant(name: "decode") { _ = try JSONDecoder().decode(Page.self, from: body) }
        let clientVariant = Variant(name: "client") { _ = try await client.model(request, as: Page.self) }
        let concurrentDecode = try await decodeVariant.run(requests: iterations, concurrency: 16)
        let concurrentClient = try await clientVariant.run(requests: iterations, concurrency: 16)
        print("16 tasks: decode only \(perCall(concurrentDecode.cpu, iterations)) µs CPU/call; APIClient.model over an instant transport \(perCall(concurrentClient.cpu, iterations)) µs CPU/call")
        let voidRequest = Request<Void>.get("/page")
        let plainStart = clock.now
        for _ in 0..<iterations * 5 { try await client.send(voidRequest) }
        print("APIClient.send(Request<Void>) over an instant transport (no decoding): \(perCall(clock.now - plainStart, iterations * 5)) µs/call")
        print("decode only: \(perCall(decodeOnly, iterations)) µs/call; APIClient.model over an instant transport: \(perCall(throughClient, iterations)) µs/call; transport call alone: \(perCall(transportOnly, iterations)) µs/call")
    }

    static func perCall(_ duration: Duration, _ count: Int) -> String {
        String(format: "%.2f", (Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12) / Double(count))
    }
}
