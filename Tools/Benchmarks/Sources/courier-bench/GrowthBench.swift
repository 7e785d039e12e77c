// `courier-bench --growth`: how each operation's cost moves as a queue grows from empty to
// 10,000,000 entries (SQLite) or 1,000,000 (PostgreSQL), with a realistic mix (three in four
// delivered and kept for retention, a fifth pending, some dead, most in groups). At each
// checkpoint: 20,000 enqueues through `OfflineQueue.enqueue` (rate, p99), 10,000 entries
// drained to bench-server at concurrency 16 (rate, p99), the counts `sync stats` reads, the
// console's overview, the size per entry, and retention deleting a day of delivered entries
// while a drain runs (the longest pause that drain sees); then as many entries as retention
// deleted are added again, to see whether the freed space is reused. The measured part is
// `GrowthWorkload` (CourierTesting), which the root package's smoke test runs at 100,000
// entries. See Docs/Benchmarks.md, "Cost as the queue grows".
import AsyncHTTPClient
import BenchSupport
import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
#if canImport(Glibc)
import Glibc
#endif

enum GrowthBench {
    static let usage = "usage: courier-bench --growth [--store sqlite|postgres] [--entries N] [--checkpoints 0,100000,...] [--enqueues N] [--drain N] [--path FILE] [--keep] [--reuse]"

    static func run(arguments: [String]) async throws {
        let value = { (name: String) -> String? in
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        let postgres = value("--store") == "postgres"
        guard ["sqlite", "postgres", nil].contains(value("--store")) else { throw BenchError(usage) }
        let entries = value("--entries").flatMap(Int.init) ?? (postgres ? 1_000_000 : 10_000_000)
        let checkpoints = value("--checkpoints").map { $0.split(separator: ",").compactMap { Int($0) } }
            ?? [0, 100_000, 1_000_000, 10_000_000].filter { $0 < entries } + [entries]
        let enqueues = value("--enqueues").flatMap(Int.init) ?? 20_000
        let drainCount = value("--drain").flatMap(Int.init) ?? 10_000
        let keep = arguments.contains("--keep")
        // `--reuse --keep --checkpoints 0 --path FILE`: the file a `--keep` run left, measured
        // again as it is (no fill), to repeat one checkpoint without filling it again.
        let reuse = arguments.contains("--reuse")

        // A reused file's entries name the port of the run that filled it: the server listens there again.
        let reusedPort = try reuse ? SQLiteGrowthStore.lastPort(path: value("--path")) : nil
        let server = try ServerProcess.start(arguments: reusedPort.map { ["--port", String($0)] } ?? [])
        defer { server.stop() }
        let (httpClient, client) = QueueBench.drainClients(port: server.port)
        let store: any GrowthStore
        if postgres {
            guard let database = try PostgresBench.configuredServer() else { throw BenchError("courier-bench --growth --store postgres: \(PostgresBench.skipped)") }
            store = PostgresGrowthStore(database: database, schema: "\(database.prefix)_\(getpid())_growth", keep: keep)
        } else {
            let path = value("--path") ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
                .appendingPathComponent("growth-bench-\(getpid()).sqlite").path
            store = SQLiteGrowthStore(path: path, keep: keep, reuse: reuse)
        }
        let queue = try await store.open(client: client)
        do {
            try await measure(store: store, queue: queue, port: server.port, entries: entries, checkpoints: checkpoints, enqueues: enqueues, drainCount: drainCount)
        } catch {
            await queue.close()
            await store.remove()
            throw error
        }
        await queue.close()
        try await httpClient.shutdown()
        await store.remove()
    }

    struct Row {
        var rows = 0
        var enqueue: GrowthWorkload.Timing
        var drain: GrowthWorkload.Timing
        var counts: Double
        var overview: Double
        var bytes: Int
        var free: Int
        var load: String
    }

    struct Retention {
        var rows: Int
        var expected: Int
        var run: GrowthWorkload.RetentionRun
        var before: Int
        var afterDelete: Int
        var freeAfterDelete: Int
        var refilled: Int
        var afterRefill: Int
        var load: String
    }

    static func measure(store: any GrowthStore, queue: OfflineQueue, port: Int, entries: Int, checkpoints: [Int], enqueues: Int, drainCount: Int) async throws {
        let url = "http://127.0.0.1:\(port)/v1/events"
        let week = 7.0 * 86_400
        // The fill's delivered rows finish over the week before the last two hours, once the
        // queue holds `entries`.
        let mix = GrowthMix(start: Date().timeIntervalSince1970 - week - 7_200, step: week / Double(max(1, entries)), url: url)
        let workload = GrowthWorkload(queue: queue)
        say("courier-bench --growth: \(store.label), up to \(entries) entries, checkpoints \(checkpoints.map(String.init).joined(separator: ", ")); "
              + "\(enqueues) enqueues one at a time, \(drainCount) entries drained at concurrency 16 to bench-server (pid \(server(port)))")
        var filled = 0, retainedThrough = 0
        var rows: [Row] = [], retentions: [Retention] = []

        /// Adds fill indexes `filled + 1 ... filled + count`, checked by the queue's counts.
        func grow(_ count: Int) async throws {
            guard count > 0 else { return }
            let before = try await queue.counts()
            let template = try await queue.enqueue(method: "POST", url: url + "/0", headers: QueuePayload.headers, body: .data(QueuePayload.body(0)), name: "POST /events",
                                                   options: EnqueueOptions(group: "device-0"))
            let range = (filled + 1)..<(filled + 1 + count)
            let began = ContinuousClock.now
            try await store.fill(range, template: template.id, mix: mix)
            let took = (ContinuousClock.now - began).seconds
            filled += count
            let after = try await queue.counts()
            let expected = GrowthMix.expected(range)
            guard after.delivered - before.delivered == expected.delivered, after.dead - before.dead == expected.dead,
                  after.pending - before.pending == expected.pending + 1 else {
                throw BenchError("the fill of \(count) rows: the queue counts \(after) after \(before), expected \(expected) more (and the template)")
            }
            say("  filled \(count) rows in \(String(format: "%.1f", took)) s (\(Bench.format(Double(count) / took)) rows/s); the queue counts \(after.total) entries: "
                  + "\(after.delivered) delivered, \(after.pending) pending, \(after.dead) dead")
        }

        for checkpoint in checkpoints {
            try await grow(checkpoint - filled)
            let (counts, _) = try await workload.counts()
            var countTimes: [Double] = [], overviewTimes: [Double] = []
            for _ in 0..<3 {
                countTimes.append(try await workload.counts().seconds)
                overviewTimes.append(try await workload.overview().seconds)
            }
            let size = try await store.size()
            let enqueue = try await workload.enqueue(enqueues) { index in
                QueuedRequest(method: "POST", url: "\(url)/e\(index)", headers: QueuePayload.headers, body: .data(QueuePayload.body(index)), name: "POST /events",
                              options: EnqueueOptions(group: index % 5 == 0 ? nil : "device-\(index % ConsoleBench.groups)"))
            }
            let drain = try await workload.drain(drainCount, concurrency: 16)
            let row = Row(rows: counts.total, enqueue: enqueue, drain: drain, counts: Goals.median(countTimes), overview: Goals.median(overviewTimes),
                          bytes: size.bytes, free: size.free, load: Measured.loadAverage())
            rows.append(row)
            say("  \(counts.total) rows: enqueue \(Bench.format(enqueue.rate))/s (p99 \(ms(enqueue.p99)) ms), drain \(Bench.format(drain.rate))/s (p99 \(ms(drain.p99)) ms, "
                  + "longest gap \(ms(drain.longest)) ms), counts \(ms(row.counts)) ms, overview \(ms(row.overview)) ms, \(perEntry(size.bytes, counts.total)) bytes/entry; load \(row.load)")

            // Retention of a day's delivered entries (the oldest seventh of the fill's week), while draining.
            guard checkpoint > 0 else { continue }
            let cutoff = retainedThrough + max(1, checkpoint / 7)
            let expected = GrowthMix.expected((retainedThrough + 1)..<cutoff).delivered
            let before = try await store.size()
            let run = try await workload.retentionWhileDraining(now: Date(timeIntervalSince1970: mix.finished(cutoff) + week), concurrency: 16)
            retainedThrough = cutoff - 1
            let afterDelete = try await store.size()
            try await grow(run.summary.deletedEntries)
            let afterRefill = try await store.size()
            let retention = Retention(rows: counts.total, expected: expected, run: run, before: before.bytes, afterDelete: afterDelete.bytes,
                                      freeAfterDelete: afterDelete.free, refilled: run.summary.deletedEntries, afterRefill: afterRefill.bytes, load: Measured.loadAverage())
            retentions.append(retention)
            say("  retention: \(run.summary.deletedEntries) deleted (\(expected) expected) in \(String(format: "%.2f", run.seconds)) s; longest drainer pause \(ms(run.longestPause)) ms "
                  + "(\(ms(run.longestPauseWithout)) ms in as long right after, without it), \(run.deliveredDuring) delivered meanwhile; size \(mib(before.bytes)) → \(mib(afterDelete.bytes)) MiB "
                  + "(\(mib(afterDelete.free)) MiB free) → \(mib(afterRefill.bytes)) MiB after \(run.summary.deletedEntries) added again; load \(retention.load)")
        }

        say("\n\(store.label): \(enqueues) enqueues one at a time, \(drainCount) entries drained at concurrency 16, per checkpoint")
        say("| rows | enqueue/s | enqueue p99 ms | drain/s | drain p99 ms | drain longest gap ms | counts ms | overview ms | bytes/entry | size MiB | load |")
        say("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for row in rows {
            say("| \(row.rows) | \(Bench.format(row.enqueue.rate)) | \(ms(row.enqueue.p99)) | \(Bench.format(row.drain.rate)) | \(ms(row.drain.p99)) | \(ms(row.drain.longest)) | "
                  + "\(ms(row.counts)) | \(ms(row.overview)) | \(perEntry(row.bytes, row.rows)) | \(mib(row.bytes)) | \(row.load) |")
        }
        if let first = rows.first, let last = rows.last, rows.count > 1 {
            say("at \(last.rows) rows against empty: enqueue \(String(format: "%.2f", last.enqueue.rate / first.enqueue.rate)), drain \(String(format: "%.2f", last.drain.rate / first.drain.rate)) (goal ≥ 0.90)")
        }
        say("\n\(store.label): retention of a day of delivered entries while a drain runs")
        say("| rows | deleted (expected) | seconds | longest drainer pause ms | longest gap, as long without retention, ms | delivered meanwhile | size MiB before → after delete (free) → after as many added | load |")
        say("|---:|---:|---:|---:|---:|---:|---|---|")
        for r in retentions {
            say("| \(r.rows) | \(r.run.summary.deletedEntries) (\(r.expected)) | \(String(format: "%.2f", r.run.seconds)) | \(ms(r.run.longestPause)) | \(ms(r.run.longestPauseWithout)) | "
                  + "\(r.run.deliveredDuring) | \(mib(r.before)) → \(mib(r.afterDelete)) (\(mib(r.freeAfterDelete))) → \(mib(r.afterRefill)) | \(r.load) |")
        }
    }

    /// Writes a line to standard output at once (`print` buffers when it goes to a file, and a
    /// long run's progress should show in its log).
    static func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    static func server(_ port: Int) -> String { "port \(port)" }
    /// Bytes per entry; a dash for a queue too small for it to mean anything.
    static func perEntry(_ bytes: Int, _ rows: Int) -> String { rows < 1_000 ? "–" : String(bytes / rows) }
    static func ms(_ seconds: Double) -> String { seconds < 0 ? "–" : ConsoleBench.ms(seconds * 1_000) }
    static func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
}
