import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueueCore

// The pages' data: each is the JSON twin of its page as is, and the HTML page renders it
// through its template (every value escaped there). Values a template shows are strings or
// flags, never optionals, so an absent value renders as nothing.

/// The overview: counts by state, by group and by name, pauses, the oldest pending entry,
/// the recent deliveries.
struct OverviewView: Encodable, Sendable {
    struct Counts: Encodable, Sendable {
        var pending, due, waitingForNetwork, inflight, inflightOrphaned, delivered, dead, blocked, stuck, conflict, total: Int
    }
    struct PausedGroup: Encodable, Sendable {
        var name: String
        /// `group=NAME`, percent-encoded, for the link to its entries.
        var query: String
    }
    /// A group's or a name's counts, or the rest of them summed.
    struct Tally: Encodable, Sendable {
        /// The group or name as shown: `(none)` for entries without a group, `N others`.
        var label: String
        /// The group or name itself; empty for entries without a group and for the others.
        var key: String
        /// `group=KEY` or `name=KEY`, percent-encoded, for the link to its entries; empty when
        /// there is no such filter.
        var query: String
        var hasQuery: Bool
        var pending, inflight, delivered, dead, total: Int
        /// Whether a pause holds it back (the queue's or its own).
        var paused: Bool
        /// Whether it is a group of its own (so it can be paused and resumed), and whether it
        /// has a pause of its own (so the form resumes it).
        var isGroup: Bool
        var pausedItself = false

        init(_ tally: QueueOverview.Tally, field: String?) {
            if tally.keys > 1 || field == nil {
                label = "\(tally.keys) others"
            } else {
                label = tally.key ?? "(none)"
            }
            key = tally.keys > 1 ? "" : tally.key ?? ""
            let filterable = field != nil && tally.keys == 1 && tally.key != nil
            query = filterable ? "\(field!)=\(formEncode(tally.key!))" : ""
            hasQuery = filterable
            pending = tally.pending
            inflight = tally.inflight
            delivered = tally.delivered
            dead = tally.dead
            total = tally.total
            paused = tally.paused
            isGroup = field == "group" && filterable
        }
    }

    var counts: Counts
    var queuePaused: Bool
    var pausedGroups: [PausedGroup]
    var pendingHeldByPauses: Int
    var oldestPendingAt: String
    /// Seconds since the oldest pending entry was enqueued; 0 when none is pending.
    var oldestPendingAgeSeconds: Int
    var lastDeliveredAt: String
    var deliveredLastMinute: Int
    var deliveredLastFiveMinutes: Int
    /// The largest groups and names, then the rest summed (a last line when there are others).
    var groups: [Tally]
    var names: [Tally]
    /// How many of the newest entries the groups and names count, and whether that is all.
    var tallied: Int
    var talliedAll: Bool
    // Flags for the template (it reads stored properties only, and a string is never false).
    var hasPausedGroups: Bool
    var hasOldestPending: Bool
    var hasLastDelivery: Bool
    var hasGroups: Bool
    var hasNames: Bool
    /// Whether blocked entries wait for each other in a loop, which nothing will release.
    var hasStuck: Bool
    /// The origins flow control holds (set after the overview is read).
    var origins: [OriginFlowView] = []
    var hasOrigins = false
    /// The last hour, per minute (set after the overview is read): the chart, and in the JSON
    /// twin its minutes.
    var activity = ActivityChart([])

    init(_ overview: QueueOverview, now: Date) {
        let counts = overview.counts
        let pauses = overview.pauses
        self.counts = Counts(
            pending: counts.pending, due: counts.due, waitingForNetwork: overview.waitingForNetwork, inflight: counts.inflight,
            inflightOrphaned: counts.inflightOrphaned, delivered: counts.delivered, dead: counts.dead, blocked: counts.blocked,
            stuck: counts.stuck, conflict: counts.conflict, total: counts.total
        )
        queuePaused = pauses.queuePaused
        pausedGroups = pauses.pausedGroups.map { PausedGroup(name: $0, query: "group=" + formEncode($0)) }
        pendingHeldByPauses = pauses.pendingHeld
        oldestPendingAt = counts.oldestPendingCreatedAt.map(wallTime) ?? ""
        oldestPendingAgeSeconds = counts.oldestPendingCreatedAt.map { max(0, Int(now.timeIntervalSince($0))) } ?? 0
        lastDeliveredAt = counts.lastDeliveredAt.map(wallTime) ?? ""
        deliveredLastMinute = overview.deliveredLastMinute
        deliveredLastFiveMinutes = overview.deliveredLastFiveMinutes
        let ownPauses = Set(pauses.pausedGroups)
        groups = overview.groups.map { tally in
            var view = Tally(tally, field: "group")
            view.pausedItself = view.isGroup && ownPauses.contains(view.key)
            return view
        } + (overview.otherGroups.map { [Tally($0, field: nil)] } ?? [])
        names = overview.names.map { Tally($0, field: "name") } + (overview.otherNames.map { [Tally($0, field: nil)] } ?? [])
        tallied = overview.examined
        talliedAll = overview.complete
        hasPausedGroups = !pausedGroups.isEmpty
        hasOldestPending = counts.oldestPendingCreatedAt != nil
        hasLastDelivery = counts.lastDeliveredAt != nil
        hasGroups = !groups.isEmpty
        hasNames = !names.isEmpty
        hasStuck = counts.stuck > 0
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
    var canRelease: Bool

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
        canRelease = ConsoleAction.release.applies(to: entry.state)
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
    var canRelease: Bool
    /// The trace the entry was enqueued in (`""` for none), and where it is shown.
    var traceID: String
    var hasTrace: Bool
    var traceURL: String
    var hasTraceURL: Bool
    /// The entries it waits for and those that wait for it (``EnqueueOptions/after``).
    var parents: [EntryID] = []
    var children: [EntryID] = []
    var hasParents = false
    var hasChildren = false
    var whenParentDies = ""
    /// The parents whose kept responses its request takes values from (``ResponseReference``).
    var responseSources: [EntryID] = []
    var takesValues = false

    /// The response it kept at its delivery (``EnqueueOptions/keepResponse``): escaped by the
    /// page as every value is; a body that is not UTF-8 is shown by its length alone.
    var hasResponse = false
    var responseSealed = false
    var responseStatus = 0
    var responseHeaders: [HeaderView] = []
    var responseBody = ""
    var responseLength = 0
    var responseTruncated = false

    mutating func keep(_ response: KeptResponse) {
        hasResponse = true
        responseStatus = response.status
        responseHeaders = response.headers.map { HeaderView(name: $0.name, value: $0.value, redacted: false) }
        responseBody = String(data: response.body, encoding: .utf8) ?? ""
        responseLength = response.body.count
        responseTruncated = response.truncated
    }

    mutating func link(_ dependencies: EntryDependencies) {
        parents = dependencies.parents
        children = dependencies.children
        hasParents = !parents.isEmpty
        hasChildren = !children.isEmpty
        whenParentDies = dependencies.whenParentDies?.rawValue ?? ""
    }

    init(_ entry: QueueEntry, now: QueueTime, traceLink: String? = nil) {
        id = entry.id
        idempotencyKey = entry.idempotencyKey
        state = entry.state.rawValue
        method = entry.method
        url = entry.url
        responseSources = entry.responseSources
        takesValues = !entry.responseSources.isEmpty
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
        canRelease = ConsoleAction.release.applies(to: entry.state)
        traceID = entry.traceContext?.traceID ?? ""
        hasTrace = entry.traceContext != nil
        // A trace id is 32 hex digits: nothing in it needs escaping in a URL.
        traceURL = hasTrace ? traceLink?.replacingOccurrences(of: "{trace_id}", with: traceID) ?? "" : ""
        hasTraceURL = !traceURL.isEmpty
    }
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
    /// The page's own path (prefix included), where the refresh form goes.
    var route: String
    /// Seconds between reloads (a `<meta http-equiv="refresh">`, no script), 0 for none.
    var refresh: Int
    var hasRefresh: Bool
    var refreshOptions: [RefreshOption]
    /// The page's other query fields, kept by the refresh form.
    var kept: [Field]

    struct RefreshOption: Encodable, Sendable {
        var value: String
        var label: String
        var selected: Bool
    }

    struct Field: Encodable, Sendable {
        var name: String
        var value: String
    }

    init(title: String, prefix: String, user: ConsoleUser?, notice: String, content: Content, route: String, query: [(name: String, value: String)]) {
        self.title = title
        self.prefix = prefix
        self.user = user?.name ?? ""
        canAct = user?.role == .admin
        self.notice = notice
        hasNotice = !notice.isEmpty
        self.content = content
        self.route = route
        let refresh = Refresh.seconds(query.last { $0.name == "refresh" }?.value)
        self.refresh = refresh
        hasRefresh = refresh > 0
        var choices = Refresh.choices
        if refresh > 0 && !choices.contains(refresh) { choices = (choices + [refresh]).sorted() }
        refreshOptions = [RefreshOption(value: "off", label: "off", selected: refresh == 0)]
            + choices.map { RefreshOption(value: String($0), label: "\($0) s", selected: $0 == refresh) }
        kept = query.filter { $0.name != "refresh" && $0.name != "notice" && $0.name != "ns" }.map { Field(name: $0.name, value: $0.value) }
    }
}

/// The live pages' reload interval, as `?refresh=SECONDS` (or `off`) keeps it in the URL.
enum Refresh {
    /// The intervals the pages offer; any from 1 to 3,600 s is taken from a URL.
    static let choices = [1, 5, 10, 30, 60]

    /// The interval `value` asks for: 0 (off) unless it is a whole number of seconds from 1 to 3,600.
    static func seconds(_ value: String?) -> Int {
        guard let value, let seconds = Int(value), (1...3_600).contains(seconds) else { return 0 }
        return seconds
    }
}

/// An ISO 8601 wall time, to the second, in UTC.
func wallTime(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle())
}
