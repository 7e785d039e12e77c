import Foundation
import HTTPCore
import Testing

/// The overview's chart of the last hour, and the pages on a phone's width.
extension SyncConsoleBrowserTests {
    @Test("the overview draws the last hour per minute: the chart and its JSON twin count the deliveries and the failure the test's drain made; on a phone's width no page scrolls sideways")
    func activityChartAndPhoneWidth() async throws {
        let dead = LockedBox(0)
        try await scene(prepare: { fixture in
            let sync = fixture.sync
            for index in 0..<5 {
                try await Self.enqueue(sync, "POST", fixture.url("/echo?n=\(index)"), "--name", "POST /orders/with/a/name/long/enough/to/wrap/on/a/phone")
            }
            dead.withLock { $0 = 0 }
            let id = try await Self.enqueue(sync, "POST", fixture.url("/status/404"))
            dead.withLock { $0 = id }
            // One drain: 5 delivered and a 404 dead, counted per minute as the drain ends.
            #expect(try await sync("drain").status == 0)
        }) { scene in
            let browser = scene.browser
            let page = try await browser.open(scene.url("/", as: Self.admin))
            #expect(page.status == 200, "\(page)")
            #expect(try await browser.count("figure.chart svg.activity") == 1, "the chart is drawn")
            #expect(try await browser.count("svg.activity g.minute") == 60, "a mark per minute of the hour")
            let delivered = try await browser.attributes("svg.activity g.minute", "data-delivered").map { Int($0 ?? "") ?? -1 }
            let failed = try await browser.attributes("svg.activity g.minute", "data-failed").map { Int($0 ?? "") ?? -1 }
            #expect(delivered.reduce(0, +) == 5 && failed.reduce(0, +) == 1, "delivered \(delivered), failed \(failed)")
            // The drain's minute is the last one with attempts (the page opened within a minute
            // of it, or the minute after): its bars and its words say what the test did.
            let last = try #require(delivered.indices.last { delivered[$0] + failed[$0] > 0 })
            #expect(last >= 58, "the drain's minute is the last or the one before: \(last)")
            #expect(delivered[last] + (last > 0 ? delivered[last - 1] : 0) == 5, "\(delivered)")
            #expect(try await browser.count("svg.activity g.minute rect.delivered") >= 1)
            #expect(try await browser.count("svg.activity g.minute rect.failed") >= 1, "the failure is drawn, hatched")
            let titles = try await browser.eval("return Array.from(document.querySelectorAll('svg.activity g.minute title')).map(t => t.textContent).join('\\n')")
            guard case .string(let words)? = titles else { Issue.record("no titles: \(String(describing: titles))"); return }
            #expect(words.split(separator: "\n").count == 60)
            #expect(words.contains(" delivered, 1 failed") || words.contains("5 delivered, 1 failed"), "\(words.suffix(300))")
            #expect(try await browser.texts("svg.activity .legend text").prefix(4) == ["delivered", "failed", "pending", "due"], "a legend in words")
            #expect(try await browser.texts("figure.chart figcaption").first?.hasPrefix("5 delivered and 1 failed in the last hour") == true)

            // The JSON twin: the same 60 minutes, oldest first, the same counts.
            let basic = "Basic " + Data("\(Self.admin.name):\(Self.admin.password)".utf8).base64EncodedString()
            let twin = try await scene.served.get("/", json: true, authorization: basic)
            #expect(twin.status == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: twin.body) as? [String: Any])
            let minutes = try #require(json["activity"] as? [[String: Any]], "\(json.keys.sorted())")
            #expect(minutes.count == 60)
            // Two reads, the page's and this one: a minute that began between them moves the
            // window by one (the oldest minute out, a new one with nothing in it).
            let twinDelivered = minutes.map { $0["delivered"] as? Int ?? -1 }, twinFailed = minutes.map { $0["failed"] as? Int ?? -1 }
            let same = twinDelivered == delivered && twinFailed == failed
            let moved = twinDelivered.dropLast() == delivered.dropFirst() && twinFailed.dropLast() == failed.dropFirst()
                && twinDelivered.last == 0 && twinFailed.last == 0
            #expect(same || moved, "the page's minutes \(delivered), \(failed); the twin's \(twinDelivered), \(twinFailed)")
            let stamps = minutes.compactMap { $0["minute"] as? String }
            #expect(stamps.count == 60 && stamps == stamps.sorted(), "oldest first: \(stamps.prefix(2))")

            // A phone's width: every page fits; wide tables scroll inside themselves.
            let width = try await browser.resize(width: 390, height: 844)
            #expect(width == .number(390) || width.map { if case .number(let value) = $0 { value <= 390 } else { false } } == true, "\(String(describing: width))")
            for path in ["/", "/entries", "/entries/\(dead.current)"] {
                let shown = try await browser.open(scene.url(path, as: Self.admin))
                #expect(shown.status == 200, "\(path): \(shown)")
                let overflow = try await browser.eval("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
                #expect(overflow == .number(0), "\(path) scrolls sideways by \(String(describing: overflow)) px on a phone")
                if path == "/" {
                    let chartWidth = try await browser.eval("return document.querySelector('svg.activity').getBoundingClientRect().width")
                    if case .number(let value)? = chartWidth { #expect(value > 200 && value <= 390, "the chart scales to the phone: \(value)") }
                    try await browser.screenshot(Self.artifacts.appendingPathComponent("console-overview-phone.png"))
                }
            }
            try await browser.resize(width: 1280, height: 900)
        }
    }
}
