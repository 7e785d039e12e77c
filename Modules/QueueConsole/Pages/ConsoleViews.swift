import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue

// The pages' data: each is the JSON twin of its page as is, and the HTML page renders it
// through its template (every value escaped there). Values a template shows are strings or
// flags, never optionals, so an absent value renders as nothing.

/// The overview: counts by state, pauses, the oldest pending entry.
struct OverviewView: Encodable, Sendable {
    struct Counts: Encodable, Sendable {
        var pending, due, inflight, inflightOrphaned, delivered, dead, total: Int
    }
    struct PausedGroup: Encodable, Sendable {
        var name: String
        /// `group=NAME`, percent-encoded, for the link to its entries.
        var query: String
    }

    var counts: Counts
    var queuePaused: Bool
    var pausedGroups: [PausedGroup]
    var pendingHeldByPauses: Int
    var oldestPendingAt: String
    /// Seconds since the oldest pending entry was enqueued; 0 when none is pending.
    var oldestPendingAgeSeconds: Int
    var lastDeliveredAt: String
    // Flags for the template (it reads stored properties only, and a string is never false).
    var hasPausedGroups: Bool
    var hasOldestPending: Bool
    var hasLastDelivery: Bool

    init(counts: QueueCounts, pauses: PauseStatus, now: Date) {
        self.counts = Counts(
            pending: counts.pending, due: counts.due, inflight: counts.inflight, inflightOrphaned: counts.inflightOrphaned,
            delivered: counts.delivered, dead: counts.dead, total: counts.total
        )
        queuePaused = pauses.queuePaused
        pausedGroups = pauses.pausedGroups.map { PausedGroup(name: $0, query: "group=" + formEncode($0)) }
        pendingHeldByPauses = pauses.pendingHeld
        oldestPendingAt = counts.oldestPendingCreatedAt.map(wallTime) ?? ""
        oldestPendingAgeSeconds = counts.oldestPendingCreatedAt.map { max(0, Int(now.timeIntervalSince($0))) } ?? 0
        lastDeliveredAt = counts.lastDeliveredAt.map(wallTime) ?? ""
        hasPausedGroups = !pausedGroups.isEmpty
        hasOldestPending = counts.oldestPendingCreatedAt != nil
        hasLastDelivery = counts.lastDeliveredAt != nil
    }
}

/// One line of the entries list.
struct EntrySummaryView: Encodable, Sendable {
    var id: EntryID
    var state: String
    var method: String
    var url: String
    var name: String
    var group: String
    var attempts: Int
    var lastStatus: String
    var createdAt: String
    var canRetry: Bool
    var canDiscard: Bool

    init(_ entry: QueueEntry) {
        id = entry.id
        state = entry.state.rawValue
        method = entry.method
        url = entry.url
        name = entry.name
        group = entry.group ?? ""
        attempts = entry.attempts
        lastStatus = entry.lastStatus.map(String.init) ?? ""
        createdAt = wallTime(entry.createdAt)
        canRetry = ConsoleAction.retry.applies(to: entry.state)
        canDiscard = ConsoleAction.discard.applies(to: entry.state)
    }
}

/// A page of the entries list, and the filter that made it.
struct EntriesView: Encodable, Sendable {
    var filter: EntriesQuery
    var entries: [EntrySummaryView]
    /// The `after` cursor of the next page; `nil` on the last page.
    var next: EntryID?
    /// The query string of the next page, empty on the last page.
    var nextQuery: String
    var hasNext: Bool
    var isEmpty: Bool
    var stateOptions: [StateOption]

    init(filter: EntriesQuery, entries: [EntrySummaryView], next: EntryID?) {
        self.filter = filter
        self.entries = entries
        self.next = next
        nextQuery = next.map(filter.query(after:)) ?? ""
        hasNext = next != nil
        isEmpty = entries.isEmpty
        stateOptions = EntryState.allCases.map { StateOption(value: $0.rawValue, selected: $0.rawValue == filter.state) }
    }

    struct StateOption: Encodable, Sendable {
        var value: String
        var selected: Bool
    }
}

/// One stored header on the detail page; credential headers show no value.
struct HeaderView: Encodable, Sendable {
    var name: String
    var value: String
    var redacted: Bool
}

/// Everything about one entry but its body.
struct EntryDetailView: Encodable, Sendable {
    var id: EntryID
    var idempotencyKey: String
    var state: String
    var method: String
    var url: String
    var name: String
    var group: String
    var priority: Int
    var headers: [HeaderView]
    var hasBody: Bool
    var bodySize: Int
    var sealKeyID: String
    var sealed: Bool
    var attempts: Int
    var lastStatus: String
    var lastError: String
    var responseExcerpt: String
    var deadReason: String
    var hasDeadReason: Bool
    var nextAttemptAt: String
    var createdAt: String
    var lastAttemptAt: String
    var finishedAt: String
    var canRetry: Bool
    var canDiscard: Bool

    init(_ entry: QueueEntry, now: QueueTime) {
        id = entry.id
        idempotencyKey = entry.idempotencyKey
        state = entry.state.rawValue
        method = entry.method
        url = entry.url
        name = entry.name
        group = entry.group ?? ""
        priority = entry.priority
        headers = entry.headers.map { header in
            let secret = HTTPField.Name(header.name).map(HTTPField.Name.credentialFields.contains) ?? false
            return HeaderView(name: header.name, value: secret ? "" : header.value, redacted: secret)
        }
        hasBody = entry.body != nil
        bodySize = entry.bodyLength ?? 0
        sealKeyID = entry.sealKeyID ?? ""
        sealed = entry.sealKeyID != nil
        attempts = entry.attempts
        lastStatus = entry.lastStatus.map(String.init) ?? ""
        lastError = entry.lastError ?? ""
        responseExcerpt = entry.responseExcerpt ?? ""
        // A retried entry keeps the reason it died for in the store; it is no longer dead.
        let deadReason = entry.state == .dead ? entry.deadReason : nil
        self.deadReason = deadReason?.rawValue ?? ""
        hasDeadReason = deadReason != nil
        nextAttemptAt = entry.state == .pending ? wallTime(entry.nextAttempt(at: now)) : ""
        createdAt = wallTime(entry.createdAt)
        lastAttemptAt = entry.lastAttemptAt.map(wallTime) ?? ""
        finishedAt = entry.finishedAt.map(wallTime) ?? ""
        canRetry = ConsoleAction.retry.applies(to: entry.state)
        canDiscard = ConsoleAction.discard.applies(to: entry.state)
    }
}

/// What an action did, for a JSON client (a browser is redirected instead).
struct ActionResultView: Encodable, Sendable {
    var action: String
    var changed: [EntryID]
    var skipped: [EntryID]
    var message: String
}

/// A page as its template sees it: the view plus what every page needs.
struct Page<Content: Encodable & Sendable>: Sendable {
    var title: String
    /// The console's path prefix ("" or "/queue"): every link, form and asset starts with it.
    var prefix: String
    var user: String
    /// Whether the user may act: a read-only user's pages have no forms.
    var canAct: Bool
    var notice: String
    var hasNotice: Bool
    var content: Content

    init(title: String, prefix: String, user: ConsoleUser?, notice: String, content: Content) {
        self.title = title
        self.prefix = prefix
        self.user = user?.name ?? ""
        canAct = user?.role == .admin
        self.notice = notice
        hasNotice = !notice.isEmpty
        self.content = content
    }
}

/// An ISO 8601 wall time, to the second, in UTC.
func wallTime(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle())
}
