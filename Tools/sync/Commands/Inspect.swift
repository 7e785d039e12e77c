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
        try await reporting {
            try await options.withQueue(create: false, readOnly: true) { queue in
                let entries = try await queue.entries(EntryFilter(states: state.states, group: group, limit: limit))
                let pauses = try await queue.pauses()
                let held = { (entry: QueueEntry) in entry.state == .pending && pauses.holds(entry) }
                switch options.json ? .json : format ?? .table {
                case .json:
                    Output.json(entries.map { entry in
                        var object = Output.object(entry, full: false)
                        object["paused"] = held(entry)
                        return object
                    })
                case .csv:
                    FileHandle.standardOutput.write(Data(CSV.document(entries, held: held).utf8))
                case .table:
                    let now = Date()
                    for entry in entries { print(Output.line(entry, now: now, held: held(entry))) }
                }
            }
        }
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
        try await reporting {
            try await options.withQueue(create: false, readOnly: true) { queue in
                guard let entry = try await queue.entry(id) else { throw QueueError.noSuchEntry(id) }
                var object = Output.object(entry, full: true, reveal: revealSecrets, bodyFolder: DatabaseLocation.isPostgresURL(options.path) ? nil : options.path + ".bodies")
                let links = try await queue.dependencies(of: id)
                if !links.parents.isEmpty {
                    object["after"] = links.parents
                    object["when_parent_dies"] = links.whenParentDies?.rawValue
                }
                if !links.children.isEmpty { object["waited_for_by"] = links.children }
                if let keeping = entry.keepResponse { object["keeps_response"] = Output.object(keeping) }
                if !entry.responseSources.isEmpty { object["takes_values_from"] = entry.responseSources }
                let kept = try await Output.keptResponse(of: entry, in: queue)
                if let kept { object["response"] = kept }
                if options.json {
                    Output.json(object)
                    return
                }
                let order = ["id", "state", "method", "url", "idempotency_key", "group", "priority", "attempts", "created_at",
                             "last_attempt_at", "next_attempt_at", "finished_at", "waiting_for_network", "lease_owner",
                             "lease_expires_at", "last_status", "dead_reason", "last_error", "response_excerpt", "name", "scopes", "sealed_key_id", "trace_id", "traceparent", "tracestate",
                             "after", "when_parent_dies", "takes_values_from", "waited_for_by", "coalescing_key"]
                for key in order {
                    let value = object[key]
                    if value == nil || value is NSNull { continue }
                    let text = (value as? [EntryID]).map { $0.map(String.init).joined(separator: ", ") } ?? "\(value!)"
                    print("\(key): \(Output.terminalSafe(text))")
                }
                print(entry.sealKeyID == nil ? "headers:" : "headers: sealed (the URL's path and query, the headers and the body)")
                for (name, value) in Output.headers(entry, reveal: revealSecrets) { print(Output.terminalSafe("  \(name): \(value)")) }
                if let body = object["body"] as? [String: Any] {
                    print("body: \(body["length"] ?? 0) bytes, \(body["stored"] ?? "")\((body["path"] as? String).map { " at \($0)" } ?? "")")
                    if let text = body["text"] as? String { print(Output.terminalSafe(text, keepingLineBreaks: true)) }
                }
                if let kept { Output.printKeptResponse(kept) }
            }
        }
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
        try await reporting {
            try await options.withQueue(create: false, readOnly: true) { queue in
                let counts = try await queue.counts()
                let pauses = try await queue.pauses()
                let origins = try await queue.originFlows()
                let age = counts.oldestPendingCreatedAt.map { max(0, Date().timeIntervalSince($0)) }
                let stuck = counts.stuck > 0 ? try await queue.stuckEntries() : []
                if options.json {
                    Output.json([
                        "origins": origins.map { flow -> [String: Any] in
                            [
                                "origin": flow.origin, "paused_until": Output.timestamp(flow.pausedUntil),
                                "pause_status": flow.pauseStatus.map { $0 as Any } ?? NSNull(),
                                "concurrency": flow.concurrency.map { $0 as Any } ?? NSNull(),
                                "limit": flow.limit.map { $0.text as Any } ?? NSNull(), "inflight": flow.inflight,
                                "failures": flow.failures,
                                "circuit": flow.circuit.map { circuit -> Any in
                                    [
                                        "open_since": Output.timestamp(circuit.openedAt), "next_probe_at": Output.timestamp(circuit.nextProbeAt),
                                        "failures": circuit.failures, "last_error": circuit.lastError.map { $0 as Any } ?? NSNull(),
                                    ] as [String: Any]
                                } ?? NSNull(),
                            ]
                        },
                        "paused": pauses.queuePaused,
                        "paused_groups": pauses.pausedGroups,
                        "pending_paused": pauses.pendingHeld,
                        "pending": counts.pending,
                        "due": counts.due,
                        "due_held_by_flow": counts.heldByFlow,
                        "inflight": counts.inflight,
                        "inflight_orphaned": counts.inflightOrphaned,
                        "delivered": counts.delivered,
                        "dead": counts.dead,
                        "blocked": counts.blocked,
                        "stuck": stuck,
                        "superseded": counts.superseded,
                        "conflict": counts.conflict,
                        "oldest_pending_age_seconds": age.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                        "next_attempt_at": Output.timestamp(counts.nextAttemptAt),
                        "last_delivered_at": Output.timestamp(counts.lastDeliveredAt),
                    ])
                    return
                }
                if pauses.queuePaused { print("PAUSED     the whole queue (sync resume)") }
                if !pauses.pausedGroups.isEmpty {
                    print(Output.terminalSafe("paused groups  \(pauses.pausedGroups.joined(separator: ", ")) (sync resume --group G)"))
                }
                for flow in origins {
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
    }
}

/// Blocked entries nothing will release, as `sync stats` and `sync drain` say it.
enum StuckReport {
    static func line(_ ids: [EntryID]) -> String {
        let shown = ids.prefix(20).map(String.init).joined(separator: ", ") + (ids.count > 20 ? ", …" : "")
        return "stuck      \(ids.count) blocked entries nothing will release (\(shown)): they wait for each other in a loop; sync release --stuck sends them, sync purge ID drops them"
    }
}
