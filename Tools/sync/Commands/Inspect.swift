import ArgumentParser
import Foundation
import OfflineQueue

/// A state filter as the command line spells it.
enum StateChoice: String, ExpressibleByArgument, CaseIterable {
    case pending, inflight, delivered, dead, all

    var states: Set<EntryState> {
        switch self {
        case .pending: [.pending]
        case .inflight: [.inflight]
        case .delivered: [.delivered]
        case .dead: [.dead]
        case .all: []
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One line per entry: id, state, method, URL, attempts, next attempt, last status.",
        discussion: """
            Oldest first. Secret query values in URLs are redacted.

            Examples:
              sync list
              sync list --state dead --limit 20
              sync --json list --group user-42
            """
    )

    @OptionGroup var options: QueueOptions

    @Option(name: .long, help: "Which entries: pending, inflight, delivered, dead or all.")
    var state: StateChoice = .all

    @Option(name: .long, help: "Only this group.")
    var group: String?

    @Option(name: .long, help: "At most this many.")
    var limit: Int = 50

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must not be negative") }
    }

    func run() async throws {
        try await reporting {
            let queue = try await options.openQueue(create: false, readOnly: true)
            let entries = try await queue.entries(EntryFilter(states: state.states, group: group, limit: limit))
            if options.json {
                Output.json(entries.map { Output.object($0, full: false) })
                return
            }
            let now = Date()
            for entry in entries {
                let next = entry.state == .pending ? Output.relative(entry.nextAttemptAt, now: now) : "-"
                let status = entry.lastStatus.map(String.init) ?? "-"
                var fields = [String(entry.id), entry.state.rawValue, entry.method, Output.url(entry, reveal: false),
                              "attempts=\(entry.attempts)", "next=\(next)", "status=\(status)"]
                if entry.state == .inflight, let owner = entry.leaseOwner { fields.append("owner=\(owner)") }
                print(Output.terminalSafe(fields.joined(separator: "  ")))
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
            let queue = try await options.openQueue(create: false, readOnly: true)
            guard let entry = try await queue.entry(id) else { throw QueueError.noSuchEntry(id) }
            let object = Output.object(entry, full: true, reveal: revealSecrets, bodyFolder: DatabaseLocation.isPostgresURL(options.path) ? nil : options.path + ".bodies")
            if options.json {
                Output.json(object)
                return
            }
            let order = ["id", "state", "method", "url", "idempotency_key", "group", "priority", "attempts", "created_at",
                         "last_attempt_at", "next_attempt_at", "finished_at", "waiting_for_network", "lease_owner",
                         "lease_expires_at", "last_status", "dead_reason", "last_error", "response_excerpt", "name", "scopes"]
            for key in order {
                let value = object[key]
                if value == nil || value is NSNull { continue }
                print("\(key): \(Output.terminalSafe("\(value!)"))")
            }
            print("headers:")
            for (name, value) in Output.headers(entry, reveal: revealSecrets) { print(Output.terminalSafe("  \(name): \(value)")) }
            if let body = object["body"] as? [String: Any] {
                print("body: \(body["length"] ?? 0) bytes, \(body["stored"] ?? "")\((body["path"] as? String).map { " at \($0)" } ?? "")")
                if let text = body["text"] as? String { print(Output.terminalSafe(text, keepingLineBreaks: true)) }
            }
        }
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Counts per state, the oldest pending age and the next due time.",
        discussion: """
            With --json the keys are pending, inflight, inflight_orphaned (in flight under a \
            drainer that is gone; the next drain takes them back at once), delivered, dead, \
            oldest_pending_age_seconds and next_attempt_at (null when none).

            Examples:
              sync stats
              sync --json stats
            """
    )

    @OptionGroup var options: QueueOptions

    func run() async throws {
        try await reporting {
            let queue = try await options.openQueue(create: false, readOnly: true)
            let counts = try await queue.counts()
            let age = counts.oldestPendingCreatedAt.map { max(0, Date().timeIntervalSince($0)) }
            if options.json {
                Output.json([
                    "pending": counts.pending,
                    "inflight": counts.inflight,
                    "inflight_orphaned": counts.inflightOrphaned,
                    "delivered": counts.delivered,
                    "dead": counts.dead,
                    "oldest_pending_age_seconds": age.map { ($0 * 1000).rounded() / 1000 as Any } ?? NSNull(),
                    "next_attempt_at": Output.timestamp(counts.nextAttemptAt),
                ])
                return
            }
            print("pending    \(counts.pending)")
            print("inflight   \(counts.inflight)" + (counts.inflightOrphaned > 0 ? " (\(counts.inflightOrphaned) under a drainer that is gone)" : ""))
            print("delivered  \(counts.delivered)")
            print("dead       \(counts.dead)")
            print("oldest pending  \(age.map { Output.duration($0) + " old" } ?? "-")")
            print("next attempt    \(counts.nextAttemptAt.map { "\(Output.iso($0)) (\(Output.relative($0)))" } ?? "-")")
        }
    }
}

struct Retry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make dead or waiting entries due now, with a fresh attempt budget.",
        discussion: """
            Examples:
              sync retry 41 42
              sync retry --dead
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "Entry ids.")
    var ids: [EntryID] = []

    @Flag(name: .long, help: "Every dead entry.")
    var dead = false

    func validate() throws {
        if dead == !ids.isEmpty { throw ValidationError("give entry ids or --dead") }
    }

    func run() async throws {
        try await reporting {
            let queue = try await options.openQueue(create: false)
            let changed = dead ? try await queue.retryDead() : try await queue.retry(ids)
            if options.json {
                Output.json(["retried": changed])
            } else {
                print("\(changed.count) entries due now")
            }
        }
    }
}

struct Purge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete delivered or dead entries, or entries by id.",
        discussion: """
            Entries in flight under a live lease are never deleted.

            Examples:
              sync purge --delivered
              sync purge --dead --older-than 7d
              sync purge 17 18
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "Entry ids.")
    var ids: [EntryID] = []

    @Flag(name: .long, help: "Delivered entries.")
    var delivered = false

    @Flag(name: .long, help: "Dead entries.")
    var dead = false

    @Option(name: .long, help: ArgumentHelp("Only entries that finished longer ago than this, such as 90s, 30m, 12h or 7d.", valueName: "duration"))
    var olderThan: String?

    func validate() throws {
        let byState = delivered || dead
        if byState == !ids.isEmpty { throw ValidationError("give --delivered, --dead, or entry ids") }
        if let olderThan, Self.seconds(olderThan) == nil {
            throw ValidationError("--older-than \(olderThan.debugDescription) is not a duration such as 90s, 30m, 12h or 7d")
        }
        if olderThan != nil && !ids.isEmpty { throw ValidationError("--older-than applies to --delivered and --dead") }
    }

    func run() async throws {
        try await reporting {
            let queue = try await options.openQueue(create: false)
            let selection: PurgeSelection
            if ids.isEmpty {
                var states: Set<EntryState> = []
                if delivered { states.insert(.delivered) }
                if dead { states.insert(.dead) }
                let before = olderThan.flatMap(Self.seconds).map { Date().addingTimeInterval(-$0) }
                selection = .states(states, finishedBefore: before)
            } else {
                selection = .ids(ids)
            }
            let count = try await queue.purge(selection)
            if options.json {
                Output.json(["purged": count])
            } else {
                print("\(count) entries purged")
            }
        }
    }

    /// `90s`, `30m`, `12h`, `7d` (or a bare number of seconds) in seconds.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        if let number = Double(text), number >= 0 { return number }
        guard let unit = text.last, let factor = units[unit], let number = Double(text.dropLast()), number >= 0 else { return nil }
        return number * factor
    }
}
