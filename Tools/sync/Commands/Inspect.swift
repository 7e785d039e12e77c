import ArgumentParser
import Foundation
import OfflineQueue

/// A state filter as the command line spells it.
enum StateChoice: String, ExpressibleByArgument, CaseIterable {
    case pending, blocked, inflight, delivered, dead, superseded, conflict, all

    var states: Set<EntryState> {
        switch self {
        case .pending: [.pending]
        case .blocked: [.blocked]
        case .inflight: [.inflight]
        case .delivered: [.delivered]
        case .dead: [.dead]
        case .superseded: [.superseded]
        case .conflict: [.conflict]
        case .all: []
        }
    }
}

/// How `sync list` prints.
enum ListFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json, csv
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One line per entry: id, state, method, URL, attempts, next attempt, last status.",
        discussion: """
            Oldest first. Secret query values in URLs are redacted. A pending entry that a pause \
            holds back shows next=paused (and "paused": true in JSON).

            --format table (the default) prints one line per entry; json one array (as --json \
            does); csv a header line and one record per entry (RFC 4180: CRLF line ends, fields \
            with a comma, a quote or a line break quoted, quotes doubled), for spreadsheets.

            Examples:
              sync list
              sync list --state dead --limit 20
              sync --json list --group user-42
              sync list --state all --limit 10000 --format csv > queue.csv
            """
    )

    @OptionGroup var options: QueueOptions

    @Option(name: .long, help: "Which entries: pending, inflight, delivered, dead or all.")
    var state: StateChoice = .all

    @Option(name: .long, help: "Only this group.")
    var group: String?

    @Option(name: .long, help: "At most this many.")
    var limit: Int = 50

    @Option(name: .long, help: "table, json or csv (--json is --format json).")
    var format: ListFormat?

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must not be negative") }
        if options.json, let format, format != .json {
            throw ValidationError("--json and --format \(format.rawValue) disagree; give one of them")
        }
    }

    func run() async throws {
        let format: ListFormat = options.json ? .json : self.format ?? .table
        try await Runner.run(options, .reading, json: format == .json) { queue in
            let entries = try await queue.entries(EntryFilter(states: state.states, group: group, limit: limit))
            let pauses = try await queue.pauses()
            return ListReport(entries: entries, held: { $0.state == .pending && pauses.holds($0) }, format: format)
        }
    }
}

/// What `sync list` prints: an array of entries (``EntrySummary`` with `paused`), a table or CSV.
struct ListReport: Report {
    var entries: [QueueEntry]
    var held: (QueueEntry) -> Bool
    var format: ListFormat

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(entries.map { EntrySummary($0, paused: held($0)) })
    }

    func printText() {
        if format == .csv {
            FileHandle.standardOutput.write(Data(CSV.document(entries, held: held).utf8))
            return
        }
        let now = Date()
        for entry in entries { print(Output.line(entry, now: now, held: held(entry))) }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One entry in full; secret header values are redacted unless asked.",
        discussion: """
            Examples:
              sync show 42
              sync --json show 42 --reveal-secrets
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "The entry's id.")
    var id: EntryID

    @Flag(name: .long, help: "Print secret header and query values as stored.")
    var revealSecrets = false

    func run() async throws {
        let bodyFolder = DatabaseLocation.isPostgresURL(options.path) ? nil : options.path + ".bodies"
        try await Runner.run(options, .reading) { queue in
            guard let entry = try await queue.entry(id) else { throw QueueError.noSuchEntry(id) }
            return ShowReport(
                entry: entry, reveal: revealSecrets, bodyFolder: bodyFolder, links: try await queue.dependencies(of: id),
                response: try await KeptResponseReport.of(entry, in: queue)
            )
        }
    }
}

/// What `sync show` prints: the entry in full (``EntrySummary`` and ``EntryDetail``), the
/// entries it waits for and that wait for it, what of its response it keeps and the response.
struct ShowReport: Report {
    var entry: QueueEntry
    var summary: EntrySummary
    var detail: EntryDetail
    var links: Links
    var reveal: Bool

    /// The keys `sync show` adds to an entry's: each left out when it has nothing to say.
    struct Links: Encodable {
        var after: [EntryID]?
        var whenParentDies: String?
        var waitedForBy: [EntryID]?
        var keepsResponse: KeepingReport?
        var takesValuesFrom: [EntryID]?
        var response: KeptResponseReport?

        enum CodingKeys: String, CodingKey {
            case after, response
            case whenParentDies = "when_parent_dies", waitedForBy = "waited_for_by", keepsResponse = "keeps_response"
            case takesValuesFrom = "takes_values_from"
        }
    }

    init(entry: QueueEntry, reveal: Bool, bodyFolder: String?, links: EntryDependencies, response: KeptResponseReport?) {
        self.entry = entry
        self.reveal = reveal
        summary = EntrySummary(entry, reveal: reveal)
        detail = EntryDetail(entry, reveal: reveal, bodyFolder: bodyFolder)
        self.links = Links(
            after: links.parents.isEmpty ? nil : links.parents,
            whenParentDies: links.parents.isEmpty ? nil : links.whenParentDies?.rawValue,
            waitedForBy: links.children.isEmpty ? nil : links.children,
            keepsResponse: entry.keepResponse.map(KeepingReport.init),
            takesValuesFrom: entry.responseSources.isEmpty ? nil : entry.responseSources,
            response: response
        )
    }

    /// One JSON object: the three parts' keys side by side.
    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        try detail.encode(to: encoder)
        try links.encode(to: encoder)
    }

    /// The fields printed as `key: value` lines, in this order; `nil` ones are left out.
    var fields: [(String, String?)] {
        let ids = { (ids: [EntryID]?) in ids.map { $0.map(String.init).joined(separator: ", ") } }
        return [
            ("id", String(summary.id)), ("state", summary.state), ("method", summary.method), ("url", summary.url),
            ("idempotency_key", detail.idempotencyKey), ("group", summary.group), ("priority", String(summary.priority)),
            ("attempts", String(summary.attempts)), ("created_at", summary.createdAt.text), ("last_attempt_at", detail.lastAttemptAt?.text),
            ("next_attempt_at", summary.nextAttemptAt?.text), ("finished_at", detail.finishedAt?.text),
            ("waiting_for_network", String(detail.waitingForNetwork)), ("lease_owner", summary.leaseOwner),
            ("lease_expires_at", detail.leaseExpiresAt?.text), ("last_status", summary.lastStatus.map(String.init)),
            ("dead_reason", detail.deadReason), ("last_error", detail.lastError), ("response_excerpt", detail.responseExcerpt),
            ("name", detail.name), ("scopes", detail.scopes.isEmpty ? "" : "\(detail.scopes)"), ("sealed_key_id", detail.sealedKeyID), ("trace_id", summary.traceID),
            ("traceparent", detail.traceparent), ("tracestate", detail.tracestate), ("after", ids(links.after)),
            ("when_parent_dies", links.whenParentDies), ("takes_values_from", ids(links.takesValuesFrom)),
            ("waited_for_by", ids(links.waitedForBy)), ("coalescing_key", detail.coalescingKey),
        ]
    }

    func printText() {
        for case let (key, value?) in fields { print("\(key): \(Output.terminalSafe(value))") }
        print(entry.sealKeyID == nil ? "headers:" : "headers: sealed (the URL's path and query, the headers and the body)")
        for header in detail.headers { print(Output.terminalSafe("  \(header.name): \(header.value)")) }
        if let body = detail.body {
            print("body: \(body.length) bytes, \(body.stored)\(body.path.map { " at \($0)" } ?? "")")
            if let text = body.text { print(Output.terminalSafe(text, keepingLineBreaks: true)) }
        }
        links.response?.printText()
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Counts per state, the oldest pending age, the next due time and the pauses.",
        discussion: """
            With --json the keys are pending, due (pending entries due now that no pause \
            holds), inflight, inflight_orphaned (in flight under a drainer that is gone; the next \
            drain takes them back at once), delivered, dead, blocked (waiting for entries to be \
            delivered first), stuck (the ids of blocked entries nothing will release: they \
            wait for each other in a loop; sync release or purge them), oldest_pending_age_seconds, \
            next_attempt_at (null when none), last_delivered_at (null when none), paused (the \
            whole queue), paused_groups, pending_paused (pending entries a pause holds back) and \
            due_held_by_flow (pending entries otherwise due that an origin's pause or limit holds \
            back: not in due), origins (each origin held by flow control: origin, paused_until, pause_status, \
            concurrency as 429s and 503s shrank it, limit as --origin-limit writes it, inflight). \
            Due times are kept on the boot clock and shown by this process's wall clock.

            Examples:
              sync stats
              sync --json stats
            """
    )

    @OptionGroup var options: QueueOptions

    func run() async throws {
        try await Runner.run(options, .reading) { queue in
            let counts = try await queue.counts()
            return StatsReport(
                counts: counts, pauses: try await queue.pauses(), flows: try await queue.originFlows(),
                stuck: counts.stuck > 0 ? try await queue.stuckEntries() : []
            )
        }
    }
}

/// What `sync stats` prints: the counts per state, the pauses, the origins held by flow
/// control, the oldest pending age and the next due time.
struct StatsReport: Report {
    var counts: QueueCounts
    var pauses: PauseStatus
    var flows: [FlowControl.OriginStatus]
    var stuck: [EntryID]
    /// The oldest pending entry's age in seconds, to the millisecond.
    var age: Double?

    init(counts: QueueCounts, pauses: PauseStatus, flows: [FlowControl.OriginStatus], stuck: [EntryID]) {
        self.counts = counts
        self.pauses = pauses
        self.flows = flows
        self.stuck = stuck
        age = counts.oldestPendingCreatedAt.map { max(0, Date().timeIntervalSince($0)) }
    }

    /// An origin held by flow control, in JSON.
    struct Origin: Encodable {
        var origin: String
        @OrNull var pausedUntil: Timestamp?
        @OrNull var pauseStatus: Int?
        @OrNull var concurrency: Int?
        @OrNull var limit: String?
        var inflight: Int
        var failures: Int
        @OrNull var circuit: Circuit?

        enum CodingKeys: String, CodingKey {
            case origin, concurrency, limit, inflight, failures, circuit
            case pausedUntil = "paused_until", pauseStatus = "pause_status"
        }

        struct Circuit: Encodable {
            var openSince: Timestamp
            var nextProbeAt: Timestamp
            var failures: Int
            @OrNull var lastError: String?

            enum CodingKeys: String, CodingKey {
                case failures, openSince = "open_since", nextProbeAt = "next_probe_at", lastError = "last_error"
            }
        }

        init(_ flow: FlowControl.OriginStatus) {
            origin = flow.origin
            pausedUntil = Timestamp(flow.pausedUntil)
            pauseStatus = flow.pauseStatus
            concurrency = flow.concurrency
            limit = flow.limit?.text
            inflight = flow.inflight
            failures = flow.failures
            circuit = flow.circuit.map {
                Circuit(openSince: Timestamp($0.openedAt), nextProbeAt: Timestamp($0.nextProbeAt), failures: $0.failures, lastError: $0.lastError)
            }
        }
    }

    enum CodingKeys: String, CodingKey {
        case origins, paused, pending, due, inflight, delivered, dead, blocked, stuck, superseded, conflict
        case pausedGroups = "paused_groups", pendingPaused = "pending_paused", dueHeldByFlow = "due_held_by_flow"
        case inflightOrphaned = "inflight_orphaned", oldestPendingAgeSeconds = "oldest_pending_age_seconds"
        case nextAttemptAt = "next_attempt_at", lastDeliveredAt = "last_delivered_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(flows.map(Origin.init), forKey: .origins)
        try container.encode(pauses.queuePaused, forKey: .paused)
        try container.encode(pauses.pausedGroups, forKey: .pausedGroups)
        try container.encode(pauses.pendingHeld, forKey: .pendingPaused)
        try container.encode(counts.pending, forKey: .pending)
        try container.encode(counts.due, forKey: .due)
        try container.encode(counts.heldByFlow, forKey: .dueHeldByFlow)
        try container.encode(counts.inflight, forKey: .inflight)
        try container.encode(counts.inflightOrphaned, forKey: .inflightOrphaned)
        try container.encode(counts.delivered, forKey: .delivered)
        try container.encode(counts.dead, forKey: .dead)
        try container.encode(counts.blocked, forKey: .blocked)
        try container.encode(stuck, forKey: .stuck)
        try container.encode(counts.superseded, forKey: .superseded)
        try container.encode(counts.conflict, forKey: .conflict)
        try container.encode(age.map { ($0 * 1000).rounded() / 1000 }, forKey: .oldestPendingAgeSeconds)
        try container.encode(Timestamp(counts.nextAttemptAt), forKey: .nextAttemptAt)
        try container.encode(Timestamp(counts.lastDeliveredAt), forKey: .lastDeliveredAt)
    }

    func printText() {
        if pauses.queuePaused { print("PAUSED     the whole queue (sync resume)") }
        if !pauses.pausedGroups.isEmpty {
            print(Output.terminalSafe("paused groups  \(pauses.pausedGroups.joined(separator: ", ")) (sync resume --group G)"))
        }
        for flow in flows {
            var parts: [String] = []
            if let circuit = flow.circuit {
                parts.append(
                    "circuit OPEN since \(Output.iso(circuit.openedAt)) after \(circuit.failures) failures in a row"
                        + (circuit.lastError.map { " (last: \($0))" } ?? "")
                        + ", next probe \(Output.relative(circuit.nextProbeAt)) (sync resume --origin closes it)"
                )
            } else if flow.failures > 0 {
                parts.append("\(flow.failures) failures in a row")
            }
            if let until = flow.pausedUntil {
                parts.append("paused until \(Output.iso(until)) (\(Output.relative(until)))" + (flow.pauseStatus.map { " after a \($0)" } ?? ""))
            }
            if let concurrency = flow.concurrency { parts.append("concurrency shrunk to \(concurrency)") }
            if let limit = flow.limit { parts.append("limit " + String(limit.text.dropFirst(limit.origin.count + 1))) }
            parts.append("\(flow.inflight) in flight")
            print(Output.terminalSafe("origin     \(flow.origin): " + parts.joined(separator: ", ")))
        }
        print("pending    \(counts.pending)" + (pauses.pendingHeld > 0 ? " (\(pauses.pendingHeld) held by a pause)" : ""))
        print("due        \(counts.due)" + (counts.heldByFlow > 0 ? " (\(counts.heldByFlow) more held by their origins' flow)" : ""))
        print("inflight   \(counts.inflight)" + (counts.inflightOrphaned > 0 ? " (\(counts.inflightOrphaned) under a drainer that is gone)" : ""))
        print("delivered  \(counts.delivered)")
        print("dead       \(counts.dead)")
        if counts.blocked > 0 { print("blocked    \(counts.blocked) (waiting for entries to be delivered first)") }
        if !stuck.isEmpty { print(StuckReport.line(stuck)) }
        if counts.superseded > 0 { print("superseded \(counts.superseded) (replaced before they were sent, or dropped after a conflict)") }
        if counts.conflict > 0 { print("conflict   \(counts.conflict) (the server answered with a conflict: sync list --state conflict; retry or purge)") }
        print("oldest pending  \(age.map { Output.duration($0) + " old" } ?? "-")")
        print("next attempt    \(counts.nextAttemptAt.map { "\(Output.iso($0)) (\(Output.relative($0)))" } ?? "-")")
        print("last delivery   \(counts.lastDeliveredAt.map { "\(Output.iso($0)) (\(Output.relative($0)))" } ?? "-")")
    }
}

/// Blocked entries nothing will release, as `sync stats` and `sync drain` say it.
enum StuckReport {
    static func line(_ ids: [EntryID]) -> String {
        let shown = ids.prefix(20).map(String.init).joined(separator: ", ") + (ids.count > 20 ? ", …" : "")
        return "stuck      \(ids.count) blocked entries nothing will release (\(shown)): they wait for each other in a loop; sync release --stuck sends them, sync purge ID drops them"
    }
}
