import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync run --metrics-address`: Prometheus's text format on `GET /metrics`, scraped with a
/// real HTTP client while the service delivers.
@Suite("sync run --metrics-address")
struct SyncMetricsTests {
    /// What a running process writes to a pipe, collected as it arrives.
    final class Collected: Sendable {
        let text = LockedBox("")

        init(_ handle: FileHandle) {
            handle.readabilityHandler = { [text] handle in
                let data = handle.availableData
                if data.isEmpty {
                    handle.readabilityHandler = nil
                } else {
                    text.withLock { $0 += String(decoding: data, as: UTF8.self) }
                }
            }
        }
    }

    /// One scrape, as samples: series name, labels and value.
    struct Scrape {
        var samples: [(name: String, labels: [String: String], value: Double)] = []

        init(_ text: String) {
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
                let series = line[..<space]
                guard let brace = series.firstIndex(of: "{") else {
                    samples.append((String(series), [:], value))
                    continue
                }
                var labels: [String: String] = [:]
                for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
                }
                samples.append((String(series[..<brace]), labels, value))
            }
        }

        /// The value of `name` with (at least) these labels; `nil` when there is none.
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }?.value
        }
    }

    @Test("gauges, counters and histograms move as entries are delivered; 404 and 405 elsewhere; SIGTERM stops it")
    func scrape() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        fixture.failOnce("/flaky", status: 503)
        for index in 0..<3 { #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=\(index)"), "--name", "POST /echo").status == 0) }
        #expect(try await sync("enqueue", "POST", fixture.url("/status/404"), "--name", "POST /status/404").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/flaky"), "--name", "POST /flaky").status == 0)
        // Held by a pause until the first scrape has seen them pending.
        #expect(try await sync("pause").status == 0)

        let (process, _, errors) = try sync.start(["run", "--no-reachability", "--poll", "0.2", "--metrics-address", "127.0.0.1:0"])
        let log = Collected(errors.fileHandleForReading)
        var port: Int?
        #expect(await eventually {
            let text = log.text.current
            guard let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+/metrics"#, options: .regularExpression) else { return false }
            port = Int(text[range].dropFirst("http://127.0.0.1:".count).dropLast("/metrics".count))
            return true
        }, "the log says where: \(log.text.current)")
        let client = APIClient(baseURL: URL(string: "http://127.0.0.1:\(try #require(port))")!, transport: URLSessionTransport())
        func scrape() async throws -> Scrape {
            let response = try await client.data(Request<Data>.get("/metrics"))
            #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            return Scrape(String(decoding: response.body, as: UTF8.self))
        }

        var before = Scrape("")
        #expect(try await eventually { before = try await scrape(); return before.value("courier_queue_pending") == 5 }, "\(before.samples)")
        #expect(before.value("courier_queue_delivered_total") == nil, "nothing delivered yet")
        #expect(before.value("courier_queue_oldest_pending_age_seconds").map { $0 >= 0 } == true)

        #expect(try await sync("resume").status == 0)
        var after = Scrape("")
        let echo = ["endpoint": "POST /echo"]
        #expect(try await eventually {
            after = try await scrape()
            return after.value("courier_queue_delivered_total", ["endpoint": "POST /echo", "status_class": "2xx"]) == 3
                && after.value("courier_queue_delivered_total", ["endpoint": "POST /flaky", "status_class": "2xx"]) == 1
                && after.value("courier_queue_pending") == 0 && after.value("courier_queue_dead") == 1
        }, "\(after.samples)")
        #expect(after.value("courier_queue_retried_total", ["endpoint": "POST /flaky", "status_class": "5xx"]) == 1)
        #expect(after.value("courier_queue_dead_lettered_total", ["endpoint": "POST /status/404", "status_class": "4xx", "reason": "rejected"]) == 1)
        #expect(after.value("courier_queue_enqueue_to_delivery_seconds_count", echo) == 3)
        #expect(after.value("courier_queue_enqueue_to_delivery_seconds_bucket", echo.merging(["le": "+Inf"]) { $1 }) == 3)
        #expect(after.value("courier_queue_attempt_duration_seconds_count", ["endpoint": "POST /flaky"]) == 2)
        #expect(after.value("courier_queue_inflight") == 0)

        for (request, status) in [(Request<Data>.get("/other"), 404), (Request<Data>.post("/metrics"), 405)] {
            do {
                _ = try await client.data(request)
                Issue.record("\(request.method) \(request.path) answered 2xx")
            } catch {
                #expect(error.response?.status.code == status)
            }
        }
        process.signal(SIGTERM)
        try await SyncRunner.wait(for: process, limit: .hangGuard)
        #expect(process.terminationStatus == 0)
        await fixture.finish()
    }

    @Test("a bad address exits 64, a taken port 71, each with the reason")
    func badAddresses() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        let sync = fixture.sync
        for address in ["70000", "localhost:", ":9464", "::1:9464", "host:port", "-1"] {
            let refused = try await sync("run", "--no-reachability", "--metrics-address", address)
            #expect(refused.status == 64, "\(address): \(refused.stderr)")
            #expect(refused.stderr.contains("--metrics-address"), "\(refused.stderr)")
        }
        let taken = try await sync("run", "--no-reachability", "--metrics-address", "127.0.0.1:\(fixture.server.port)")
        #expect(taken.status == 71, "\(taken.stderr)")
        #expect(taken.stderr.contains("cannot serve metrics on 127.0.0.1:\(fixture.server.port)"), "\(taken.stderr)")
        await fixture.finish()
    }
}
