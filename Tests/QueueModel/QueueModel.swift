import Foundation
import HTTPCore
import OfflineQueueCore

/// The reference model of the queue: what every store must do, as a pure value. Each call is
/// one call of the storage contract (``QueueStorage``), applied to the model's rows in memory,
/// with the engine's own rules where they exist: ``DependencyRule`` (verdicts, loops),
/// ``CoalescingRule``, ``BulkOperation``, ``OriginFlowBook`` and ``OriginFlow``
/// (flow control), ``OriginLimitTable``. What is written here and nowhere in the engine is the
/// rest of the contract as its documentation states it: the claim order, group heads, pauses,
/// leases and owner liveness, settlements, retries, purges, retention and counts.
///
/// Time is the model's own: `t` runs on for the whole program (what the boot clock measures
/// within a boot, and what PostgreSQL's fleet clock measures across boots), `wall` is the
/// host's wall clock, which a program may step, and `boot` counts reboots. The stores differ
/// only where the contract lets them: across a reboot SQLite carries its rows over by the
/// wall clock (``Flavour/sqlite``), PostgreSQL keeps the fleet's time (``Flavour/postgres``),
/// and memory lives within one process (no reboot).
struct QueueModel {
    /// How a store keeps time across reboots and stamps what people read.
    enum Flavour: String, Sendable, CaseIterable {
        case memory, sqlite, postgres
    }

    /// The model's clock reading.
    struct Clock: Hashable, Sendable {
        var t: Double
        var wall: Double
        var boot: Int
    }

    struct Entry: Hashable {
        var id: Int
        var key: String
        var url: String
        var group: String?
        var priority: Int
        var state: EntryState = .pending
        var attempts = 0
        var lastStatus: Int?
        var deadReason: EntryLifecycle.DeadReason?
        var waiting = false
        /// When it is due, on the model's clock, and as the wall stamp the store writes beside it.
        var due: Double
        var dueWall: Double
        /// When its budget started.
        var budget: Double
        var budgetWall: Double
        /// The boot whose readings its times are on (SQLite carries rows of another boot over).
        var rowBoot: Int
        var attempted: Double?
        /// The boot whose clock read `attempted` (on SQLite, a reading of another boot is void).
        var attemptedBoot: Int?
        /// Whether an attempt of it ever started (its `lastAttemptAt`).
        var tried = false
        var owner: Int?
        var leaseUntil: Double?
        /// The boot of the claim that holds it.
        var leaseBoot: Int?
        /// When it finished, as the store stamps it (a wall time; the fleet's on PostgreSQL).
        var finished: Double?
        var created: Double
        var coalescing: String?
        var keep: Bool
        var sources: [Int]
        var delivery: EntryDelivery?
        /// Whether it waits as a coalescing enqueue left it (inserted or replaced under its key),
        /// never claimed since: at most one such entry waits under a key.
        var coalesced = false
    }

    struct Link: Hashable {
        var parent: Int
        var policy: ParentDeathPolicy
    }

    let flavour: Flavour
    private(set) var entries: [Int: Entry] = [:]
    private(set) var byKey: [String: Int] = [:]
    private(set) var lastID = 0
    private(set) var links: [Int: [Link]] = [:]
    private(set) var children: [Int: Set<Int>] = [:]
    private(set) var deliveredParents: Set<Int> = []
    private(set) var kept: Set<Int> = []
    private(set) var pauses: Set<String?> = []
    /// Flow rows by origin, with the boot whose readings they hold (SQLite's carry-over).
    private(set) var flows: [String: OriginFlow] = [:]
    private(set) var flowBoot: [String: Int] = [:]
    /// The drainers whose hold lives.
    private(set) var live: Set<Int> = []

    init(flavour: Flavour) {
        self.flavour = flavour
    }

    // MARK: - Drainers

    mutating func open(_ session: Int) { live.insert(session) }
    mutating func kill(_ session: Int) { live.remove(session) }

    /// A reboot: every drainer died with its process; SQLite carries its rows over at the next
    /// drain's start (``carryOver(now:maxDelay:)``).
    mutating func reboot() { live.removeAll() }

    // MARK: - Enqueue

    struct NewEntry {
        var key: String
        var url: String
        var group: String?
        var priority: Int
        /// Seconds after the enqueue's wall time (`notBefore`).
        var wait: Double
        var after: [Int]
        var policy: ParentDeathPolicy
        var keep: Bool
        /// The parents whose kept responses it reads (each among `after`).
        var reads: [Int]
        var coalescing: String?
        var delivery: EntryDelivery?
    }

    enum Ticket: Hashable {
        case inserted(Int)
        case deduplicated(Int)
        case replaced(Int, superseded: Int)
    }

    mutating func insert(_ batch: [NewEntry], now: Clock) throws(QueueError) -> [Ticket] {
        var model = self
        var tickets: [Ticket] = []
        for new in batch { tickets.append(try model.insert(new, now: now)) }
        self = model
        return tickets
    }

    private mutating func insert(_ new: NewEntry, now: Clock) throws(QueueError) -> Ticket {
        if let id = byKey[new.key] { return .deduplicated(id) }
        var behind: Int?
        if let key = new.coalescing {
            let holders = entries.values.filter { $0.coalescing == key && [.pending, .blocked, .inflight].contains($0.state) }
                .map { CoalescingRule.Holder(id: EntryID($0.id), inFlight: $0.state == .inflight) }
            switch CoalescingRule.decide(holders) {
            case .insert: break
            case .after(let predecessor): behind = Int(predecessor)
            case .replace(let id):
                let superseded = try replace(Int(id), with: new, reason: CoalescingRule.supersededReason(by: id, key: key), now: now)
                return .replaced(Int(id), superseded: superseded)
            }
        }
        let id = lastID + 1
        if !new.after.isEmpty { try checkParents(child: id, after: new.after, reads: new.reads, below: []) }
        lastID = id
        entries[id] = Entry(
            id: id, key: new.key, url: new.url, group: new.group, priority: new.priority, due: now.t + new.wait,
            dueWall: now.wall + new.wait, budget: now.t, budgetWall: now.wall, rowBoot: now.boot, created: stamp(now),
            coalescing: new.coalescing, keep: new.keep, sources: Array(Set(new.reads)).sorted(), delivery: new.delivery,
            coalesced: new.coalescing != nil
        )
        byKey[new.key] = id
        if !new.after.isEmpty { link(id, to: new.after, policy: new.policy, now: now) }
        if let behind { link(id, to: [behind], policy: .proceed, now: now) }
        return .inserted(id)
    }

    /// The checks a store makes when it links `child` to `after`: no loop, each parent stored,
    /// each parent read keeping a response.
    private func checkParents(child: Int, after: [Int], reads: [Int], below: [DependencyRule.Link]) throws(QueueError) {
        if let loop = DependencyRule.loop(child: EntryID(child), parents: after.map { EntryID($0) }, below: below) {
            throw .dependencyCycle(loop)
        }
        if let missing = after.first(where: { entries[$0] == nil }) { throw .noSuchDependency(EntryID(missing)) }
        try checkReads(reads)
    }

    private func checkReads(_ reads: [Int]) throws(QueueError) {
        guard !reads.isEmpty else { return }
        var keeping: [EntryID: ResponseKeeping] = [:]
        for parent in reads where entries[parent]?.keep == true { keeping[EntryID(parent)] = ResponseKeeping() }
        try ResponseReference.check(reads.map { ResponseReference(entry: EntryID($0), part: .status) }, keeping: keeping)
    }

    private mutating func link(_ child: Int, to parents: [Int], policy: ParentDeathPolicy, now: Clock) {
        for parent in parents where !(links[child] ?? []).contains(where: { $0.parent == parent }) {
            links[child, default: []].append(Link(parent: parent, policy: policy))
            children[parent, default: []].insert(child)
            if entries[parent]?.state == .delivered { deliveredParents.insert(parent) }
        }
        entries[child]?.state = .blocked
        resolve([child], now: now)
    }

    /// The links under `id`: each link whose parent is `id` or waits for it.
    private func links(below id: Int) -> [DependencyRule.Link] {
        var found: [DependencyRule.Link] = []
        var seen: Set<Int> = [id]
        var next = [id]
        while let parent = next.popLast() {
            for child in children[parent] ?? [] {
                found.append(DependencyRule.Link(child: EntryID(child), parent: EntryID(parent)))
                if seen.insert(child).inserted { next.append(child) }
            }
        }
        return found
    }

    /// Entry `id` takes `new` in place; its old request is kept as superseded under a new id.
    private mutating func replace(_ id: Int, with new: NewEntry, reason: String, now: Clock, byCoalescing: Bool = true) throws(QueueError) -> Int {
        try checkReads(new.reads)
        let fresh = new.after.filter { parent in !(links[id] ?? []).contains { $0.parent == parent } }
        if !fresh.isEmpty { try checkParents(child: id, after: fresh, reads: new.reads, below: links(below: id)) }
        guard let old = entries[id] else { return 0 }
        lastID += 1
        var record = old
        record.id = lastID
        record.state = .superseded
        record.finished = stamp(now)
        record.coalescing = nil
        record.deadReason = nil
        record.owner = nil
        record.leaseUntil = nil
        entries[lastID] = record
        byKey[old.key] = lastID
        var entry = old
        entry.key = new.key
        entry.url = new.url
        entry.group = new.group
        entry.priority = new.priority
        entry.attempts = 0
        entry.created = stamp(now)
        entry.budget = now.t
        entry.budgetWall = now.wall
        entry.due = now.t + new.wait
        entry.dueWall = now.wall + new.wait
        entry.rowBoot = now.boot
        entry.attempted = nil
        entry.tried = false
        entry.coalesced = byCoalescing
        entry.finished = nil
        entry.waiting = false
        entry.lastStatus = nil
        entry.deadReason = nil
        entry.keep = new.keep
        entry.sources = Array(Set(new.reads)).sorted()
        entry.delivery = new.delivery
        entries[id] = entry
        byKey[new.key] = id
        if !fresh.isEmpty { link(id, to: fresh, policy: new.policy, now: now) }
        return lastID
    }

    // MARK: - Dependencies

    /// The blocked entries among `ids` become what ``DependencyRule`` says; deaths cascade.
    private mutating func resolve(_ ids: [Int], now: Clock) {
        var next = ids
        while let id = next.popLast() {
            guard let entry = entries[id], entry.state == .blocked, let parents = links[id] else { continue }
            let verdict = DependencyRule.verdict(
                parents: parents.map { link in
                    DependencyRule.Parent(
                        id: EntryID(link.parent), state: deliveredParents.contains(link.parent) ? .delivered : entries[link.parent]?.state,
                        policy: link.policy
                    )
                },
                policy: parents.first?.policy ?? .die
            )
            switch verdict {
            case .blocked:
                continue
            case .due:
                entries[id]?.state = .pending
                if flavour == .sqlite && entry.rowBoot != now.boot {
                    // Readings of another boot, carried over by the wall clock as a drain's start does.
                    entries[id]?.budget = now.t - max(0, now.wall - entry.budgetWall)
                    entries[id]?.due = now.t + min(max(0, entry.dueWall - now.wall), 3600)
                    entries[id]?.rowBoot = now.boot
                }
            case .dead(let dead):
                entries[id]?.state = .dead
                entries[id]?.deadReason = dead.reason
                let finished = stamp(now)
                entries[id]?.finished = finished
                entries[id]?.waiting = false
                next.append(contentsOf: (children[id] ?? []).sorted())
            }
        }
    }

    private mutating func resolveChildren(of parents: [Int], now: Clock) {
        resolve(parents.flatMap { (children[$0] ?? []).sorted() }, now: now)
    }

    /// The entries `id` waits for and those that wait for it.
    func dependencies(of id: Int) -> (parents: [Int], children: [Int]) {
        ((links[id] ?? []).map(\.parent).sorted(), (children[id] ?? []).sorted())
    }

    /// The blocked entries nothing will release.
    var stuck: Set<Int> {
        let blockedLinks = links.flatMap { child, parents -> [DependencyRule.Link] in
            guard entries[child]?.state == .blocked else { return [] }
            return parents.filter { entries[$0.parent]?.state == .blocked && !deliveredParents.contains($0.parent) }
                .map { DependencyRule.Link(child: EntryID(child), parent: EntryID($0.parent)) }
        }
        return Set(DependencyRule.stuck(blockedLinks).map { Int($0) })
    }

    // MARK: - The drain

    /// What a settlement says of its entry, computed by the caller from the engine's rules.
    struct Settlement {
        var id: Int
        var transition: EntryLifecycle.Transition
        var keeps: Bool
        /// The conflict resolver's new request, for a `.retry` that replaces the entry.
        var replacement: NewEntry?
        var url: String
        /// A failure below HTTP that says the server is unwell, and whether the entry went as
        /// its origin's probe.
        var unwell: String?
        var probe = false
        /// Where the next probe falls in its range (``OfflineQueueCore/Settlement/jitter``).
        var jitter = 0.5
    }

    struct ClaimResult: Hashable {
        var lost: Set<Int> = []
        var claimed: [Int] = []
        var reclaimed = 0
        var heldFor: Double?
        var probeIn: Double?
        var pausedOrigins: Set<String> = []
        var probes: Set<Int> = []
        var opened: Set<String> = []
        var closed: Set<String> = []
    }

    /// One drain commit: flow, settlements, carry-over, orphans, lapsed leases, then the claim.
    mutating func settleAndClaim(
        _ settlements: [Settlement], session: Int, now: Clock, limit: Int, lease: Double, since: Double?, carryOver: Bool,
        maxDelay: Double, reclaim: Bool, flow: FlowSettings
    ) -> ClaimResult {
        var result = ClaimResult()
        if !settlements.isEmpty { (result.opened, result.closed) = recordFlow(settlements, session: session, now: now, settings: flow) }
        result.lost = settle(settlements, session: session, now: now)
        if carryOver { self.carryOver(now: now, maxDelay: maxDelay) }
        if reclaim { result.reclaimed = reclaimOrphans(session: session) }
        if limit > 0 {
            if reclaim { returnLapsedLeases(session: session, now: now) }
            claim(limit: limit, session: session, now: now, lease: lease, since: since, into: &result)
        }
        return result
    }

    /// Settlements alone (no claim, no chores; flow with the default settings).
    mutating func settleOnly(_ settlements: [Settlement], session: Int, now: Clock) -> Set<Int> {
        recordFlow(settlements, session: session, now: now, settings: FlowSettings())
        return settle(settlements, session: session, now: now)
    }

    private func holds(_ session: Int, _ id: Int) -> Bool {
        entries[id]?.state == .inflight && entries[id]?.owner == session
    }

    private mutating func settle(_ settlements: [Settlement], session: Int, now: Clock) -> Set<Int> {
        var lost: Set<Int> = []
        var finished: [Int] = []
        for settlement in settlements {
            guard holds(session, settlement.id), var entry = entries[settlement.id] else {
                lost.insert(settlement.id)
                continue
            }
            switch settlement.transition {
            case .deliver(let status):
                finished.append(entry.id)
                if children[entry.id] != nil { deliveredParents.insert(entry.id) }
                entry.state = .delivered
                entry.attempts += 1
                entry.finished = stamp(now)
                entry.lastStatus = status
                entry.waiting = false
                if settlement.keeps { kept.insert(entry.id) }
            case .retry(let retry):
                entry.state = .pending
                entry.attempts += retry.consumesAttempt ? 1 : 0
                entry.due = now.t + retry.after.seconds
                entry.dueWall = now.wall + retry.after.seconds
                entry.rowBoot = now.boot
                entry.waiting = retry.waitingForNetwork
                entry.lastStatus = retry.status
            case .deadLetter(let dead):
                finished.append(entry.id)
                entry.state = .dead
                entry.attempts += dead.consumesAttempt ? 1 : 0
                entry.finished = stamp(now)
                entry.lastStatus = dead.status
                entry.deadReason = dead.reason
                entry.waiting = false
            case .release:
                entry.state = .pending
            case .conflict(let conflict), .drop(let conflict):
                let dropped = if case .drop = settlement.transition { true } else { false }
                if dropped { finished.append(entry.id) }
                entry.state = dropped ? .superseded : .conflict
                entry.attempts += 1
                entry.finished = stamp(now)
                entry.lastStatus = conflict.status
                entry.waiting = false
            }
            entry.owner = nil
            entry.leaseUntil = nil
            entries[entry.id] = entry
            if let replacement = settlement.replacement {
                _ = try? replace(entry.id, with: replacement, reason: "replaced by the conflict resolver", now: now, byCoalescing: false)
            }
        }
        resolveChildren(of: finished, now: now)
        return lost
    }

    /// Rows of another boot get readings of this one, by the wall clock (SQLite); claims of
    /// another boot died with it.
    private mutating func carryOver(now: Clock, maxDelay: Double) {
        guard flavour == .sqlite else { return }
        for (id, entry) in entries where entry.state == .inflight && entry.leaseBoot != now.boot { unlease(id) }
        for (id, entry) in entries where entry.state == .pending && entry.rowBoot != now.boot {
            entries[id]?.budget = now.t - max(0, now.wall - entry.budgetWall)
            entries[id]?.due = now.t + min(max(0, entry.dueWall - now.wall), maxDelay)
            entries[id]?.attempted = nil
            entries[id]?.rowBoot = now.boot
        }
    }

    private mutating func reclaimOrphans(session: Int) -> Int {
        var reclaimed = 0
        for (id, entry) in entries where entry.state == .inflight {
            guard let holder = entry.owner, holder != session, !live.contains(holder) else { continue }
            unlease(id)
            reclaimed += 1
        }
        return reclaimed
    }

    private mutating func unlease(_ id: Int) {
        entries[id]?.state = .pending
        entries[id]?.owner = nil
        entries[id]?.leaseUntil = nil
        entries[id]?.leaseBoot = nil
    }

    private func inflightByOrigin() -> [Substring: Int] {
        var counts: [Substring: Int] = [:]
        for entry in entries.values where entry.state == .inflight {
            if let origin = FlowOrigin.key(ofURL: entry.url) { counts[origin, default: 0] += 1 }
        }
        return counts
    }

    /// The flow rows as a claim reads them at `now` (SQLite carries a row of another boot over
    /// by its wall times).
    private func flowRows(now: Clock) -> [OriginFlow] {
        flows.map { origin, row in
            guard flavour == .sqlite, flowBoot[origin] != now.boot else { return row }
            var carried = row
            carried.pausedUntil = row.pausedUntilWall.map { now.t + max(0, $0 - now.wall) }
            // An open circuit's next probe, as a pause: what was left of it by the wall clock.
            carried.openUntil = row.openUntilWall.map { now.t + max(0, $0 - now.wall) }
            carried.refilledAt = now.t
            return carried
        }
    }

    private mutating func write(_ row: OriginFlow, now: Clock) {
        flows[row.origin] = row
        flowBoot[row.origin] = now.boot
    }

    /// Returns the origins whose circuits the settlements opened and closed; a closed one's
    /// pending entries are due at once.
    @discardableResult
    private mutating func recordFlow(_ settlements: [Settlement], session: Int, now: Clock, settings: FlowSettings) -> (Set<String>, Set<String>) {
        var rows = Dictionary(flowRows(now: now).map { ($0.origin, $0) }, uniquingKeysWith: { first, _ in first })
        var inflight: [Substring: Int]?
        var changed: Set<String> = []
        var opened: Set<String> = []
        var closed: Set<String> = []
        for settlement in settlements where holds(session, settlement.id) {
            var signalling = OfflineQueueCore.Settlement(id: EntryID(settlement.id), transition: settlement.transition)
            signalling.unwell = settlement.unwell
            signalling.probe = settlement.probe
            guard let signal = signalling.flowSignal, let origin = FlowOrigin.key(ofURL: settlement.url) else { continue }
            let key = String(origin)
            if case .success = signal, rows[key] == nil { continue }
            if case .overload = signal, inflight == nil { inflight = inflightByOrigin() }
            var row = rows[key] ?? OriginFlow(origin: key, patterns: OriginLimitTable(rows: Array(rows.values)), now: now.t)
            switch row.record(signal, now: now.t, wall: now.wall, inflight: inflight?[origin] ?? 1, settings: settings, jitter: settlement.jitter) {
            case .opened?: opened.insert(key)
            case .closed?: closed.insert(key)
            case nil: break
            }
            rows[key] = row
            changed.insert(key)
        }
        for key in changed { if let row = rows[key] { write(row, now: now) } }
        for origin in closed { makeDue(origin: origin, now: now) }
        return (opened, closed)
    }

    /// Every pending entry of `origin` due now: its circuit closed.
    private mutating func makeDue(origin: String, now: Clock) {
        for (id, entry) in entries where entry.state == .pending && entry.due > now.t && FlowOrigin.key(ofURL: entry.url) == origin[...] {
            entries[id]?.due = now.t
            entries[id]?.dueWall = now.wall
        }
    }

    /// The lapsed leases of other drainers (one that lives but hangs) go back to pending.
    private mutating func returnLapsedLeases(session: Int, now: Clock) {
        for (id, entry) in entries where entry.state == .inflight && entry.owner != session {
            if let until = entry.leaseUntil, until < now.t { unlease(id) }
        }
    }

    private mutating func claim(limit: Int, session: Int, now: Clock, lease: Double, since: Double?, into result: inout ClaimResult) {
        let queuePaused = pauses.contains(nil)
        // The first open entry of each group, and only while none of the group is in flight.
        var heads: [String: Int] = [:]
        var sending: Set<String> = []
        for entry in entries.values where [.pending, .inflight, .blocked, .conflict].contains(entry.state) {
            guard let group = entry.group else { continue }
            if entry.id < heads[group, default: .max] { heads[group] = entry.id }
            if entry.state == .inflight { sending.insert(group) }
        }
        let candidates = entries.values.filter { entry in
            guard entry.state == .pending, entry.due <= now.t, !queuePaused else { return false }
            if let since, let attempted = entry.attempted, flavour != .sqlite || entry.attemptedBoot == now.boot, attempted >= since {
                return false
            }
            if let group = entry.group, heads[group] != entry.id || sending.contains(group) || pauses.contains(group) { return false }
            return true
        }
        .sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
        var chosen: [Entry] = []
        if flows.isEmpty {
            chosen = Array(candidates.prefix(limit))
        } else {
            var book = OriginFlowBook(flowRows(now: now), inflight: inflightByOrigin(), now: now.t)
            // Each open circuit's probe first (the first of its origin's entries in claim
            // order), then the others; an open circuit's entries are never walked.
            let open = Set(book.openOrigins)
            for origin in book.probingOrigins where chosen.count < limit {
                guard let candidate = candidates.first(where: { FlowOrigin.key(ofURL: $0.url) == origin[...] }) else { continue }
                if book.admission(url: candidate.url) == .probe {
                    chosen.append(candidate)
                    result.probes.insert(candidate.id)
                }
            }
            for candidate in candidates where chosen.count < limit {
                if let origin = FlowOrigin.key(ofURL: candidate.url), open.contains(String(origin)) { continue }
                if book.admit(url: candidate.url) { chosen.append(candidate) }
            }
            let (changed, idle) = book.written()
            for row in changed { write(row, now: now) }
            for origin in idle {
                flows[origin] = nil
                flowBoot[origin] = nil
            }
            result.heldFor = book.heldFor?.seconds
            result.probeIn = book.probeIn?.seconds
            result.pausedOrigins = Set(book.pausedOrigins)
        }
        for candidate in chosen {
            entries[candidate.id]?.state = .inflight
            entries[candidate.id]?.owner = session
            entries[candidate.id]?.leaseUntil = now.t + lease
            entries[candidate.id]?.attempted = now.t
            entries[candidate.id]?.attemptedBoot = now.boot
            entries[candidate.id]?.tried = true
            entries[candidate.id]?.coalesced = false
            entries[candidate.id]?.leaseBoot = now.boot
        }
        result.claimed = chosen.map(\.id)
    }

    mutating func renewLeases(_ ids: [Int], session: Int, now: Clock, lease: Double) {
        for id in ids where holds(session, id) { entries[id]?.leaseUntil = now.t + lease }
    }

    mutating func wakeNetworkWaiters(now: Clock) -> Int {
        var woken = 0
        for (id, entry) in entries where entry.state == .pending && entry.waiting {
            entries[id]?.waiting = false
            entries[id]?.due = now.t
            entries[id]?.dueWall = now.wall
            woken += 1
        }
        return woken
    }

    mutating func storeOriginLimits(_ limits: [FlowControl.OriginLimit], now: Clock) {
        let table = OriginLimitTable(limits)
        let rows = Dictionary(flowRows(now: now).map { ($0.origin, $0) }, uniquingKeysWith: { first, _ in first })
        guard !table.agrees(with: rows.mapValues(\.limit)) else { return }
        for origin in Set(rows.keys).union(limits.map(\.origin)) {
            var row = rows[origin] ?? OriginFlow(origin: origin)
            row.set(table.limit(for: origin), now: now.t)
            if row.isIdle(at: now.t) {
                flows[origin] = nil
                flowBoot[origin] = nil
            } else {
                write(row, now: now)
            }
        }
    }

    // MARK: - Operators

    /// Due now with a fresh budget; one that waits for others is blocked again first.
    private mutating func restart(_ id: Int, now: Clock) {
        guard var entry = entries[id] else { return }
        entry.coalesced = false
        entry.state = .pending
        entry.attempts = 0
        entry.budget = now.t
        entry.budgetWall = now.wall
        entry.due = now.t
        entry.dueWall = now.wall
        entry.rowBoot = now.boot
        entry.waiting = false
        entry.finished = nil
        entry.deadReason = nil
        entries[id] = entry
        if links[id] != nil {
            entries[id]?.state = .blocked
            resolve([id], now: now)
        }
    }

    mutating func retry(_ ids: [Int]?, now: Clock) throws(QueueError) -> [Int] {
        guard let ids else {
            let dead = entries.values.filter { $0.state == .dead }.map(\.id).sorted()
            for id in dead { restart(id, now: now) }
            return dead
        }
        for id in ids {
            guard let entry = entries[id] else { throw .noSuchEntry(EntryID(id)) }
            if entry.state == .inflight { throw .entryInFlight(EntryID(id)) }
        }
        for id in ids where entries[id].map({ BulkOperation.retries($0.state) }) == true { restart(id, now: now) }
        return ids
    }

    /// Whether `entry` is in flight under a drainer that lives.
    private func held(_ entry: Entry) -> Bool {
        entry.state == .inflight && entry.owner.map(live.contains) == true
    }

    private mutating func delete(_ ids: [Int], now: Clock?) {
        for id in ids {
            guard let entry = entries.removeValue(forKey: id) else { continue }
            kept.remove(id)
            for link in links.removeValue(forKey: id) ?? [] { children[link.parent]?.remove(id) }
            byKey[entry.key] = nil
        }
        if let now { resolveChildren(of: ids, now: now) }
    }

    mutating func purge(ids: [Int], now: Clock) throws(QueueError) -> Int {
        for id in ids {
            guard let entry = entries[id] else { throw .noSuchEntry(EntryID(id)) }
            if held(entry) { throw .entryInFlight(EntryID(id)) }
        }
        let unique = Array(Set(ids)).sorted()
        delete(unique, now: now)
        return unique.count
    }

    mutating func purge(states: Set<EntryState>, before: Double?, now: Clock) -> Int {
        let chosen = states.subtracting([.inflight])
        let ids = entries.values.filter { entry in
            chosen.contains(entry.state) && before.map { (entry.finished ?? entry.created) < $0 } ?? true
        }.map(\.id).sorted()
        delete(ids, now: now)
        return ids.count
    }

    /// A selection as the model reads one: the conditions a program uses.
    struct Selection: Hashable {
        var states: Set<EntryState> = []
        var group: String?
        var status: ClosedRange<Int>?
        var urlPrefix: String?
        var limit: Int?

        func holds(for entry: Entry) -> Bool {
            if let group, entry.group != group { return false }
            if let status, !(entry.lastStatus.map(status.contains) ?? false) { return false }
            if let urlPrefix, !entry.url.hasPrefix(urlPrefix) { return false }
            return true
        }
    }

    struct Change: Hashable {
        var ids: [Int]
        var skipped: [Int]
    }

    mutating func change(_ operation: BulkOperation, matching selection: Selection, now: Clock, dryRun: Bool) -> Change {
        var asStored = EntrySelection(states: selection.states)
        asStored.limit = selection.limit
        let states = operation.states(of: asStored)
        guard !states.isEmpty else { return Change(ids: [], skipped: []) }
        let found = entries.values.filter { states.contains($0.state) && selection.holds(for: $0) }
            .sorted { $0.id < $1.id }
            .prefix(selection.limit.map { max(0, $0) } ?? .max)
        let (changed, skipped) = operation.plan(found.map { entry in
            BulkMatch(id: EntryID(entry.id), state: entry.state, drainerLives: held(entry), bodyReference: nil)
        })
        let ids = changed.map { Int($0.id) }
        if !dryRun {
            switch operation {
            case .retry: for id in ids { restart(id, now: now) }
            case .purge: delete(ids, now: now)
            case .release: _ = try? release(ids, now: now)
            }
        }
        return Change(ids: ids, skipped: skipped.map { Int($0) })
    }

    mutating func pause(group: String?) -> Bool { pauses.insert(group).inserted }

    mutating func resume(group: String?) -> Bool { pauses.remove(group) != nil }

    mutating func resume(origin: String, now: Clock) -> Bool {
        guard var row = flowRows(now: now).first(where: { $0.origin == origin }), row.isPaused(at: now.t) || row.window != nil || row.isOpen else {
            return false
        }
        let wasOpen = row.isOpen
        row.resume()
        if row.isIdle(at: now.t) {
            flows[origin] = nil
            flowBoot[origin] = nil
        } else {
            write(row, now: now)
        }
        if wasOpen { makeDue(origin: origin, now: now) }
        return true
    }

    mutating func release(_ ids: [Int], now: Clock) throws(QueueError) -> [Int] {
        if let missing = ids.first(where: { entries[$0] == nil }) { throw .noSuchEntry(EntryID(missing)) }
        let released = Array(Set(ids)).sorted().filter { entries[$0]?.state == .blocked }
        for id in released {
            for link in links.removeValue(forKey: id) ?? [] { children[link.parent]?.remove(id) }
            entries[id]?.state = .pending
            entries[id]?.due = now.t
            entries[id]?.dueWall = now.wall
            if flavour == .sqlite, let entry = entries[id], entry.rowBoot != now.boot {
                entries[id]?.budget = now.t - max(0, now.wall - entry.budgetWall)
            }
            entries[id]?.rowBoot = now.boot
        }
        return released
    }

    // MARK: - Upkeep

    /// Delivered and superseded entries that finished before `cutoff` (a store's stamp), but
    /// for those an open entry linked to them still reads (one an operator released, its links
    /// dropped, keeps none).
    mutating func deleteDelivered(before cutoff: Double) -> Int {
        let open: Set<EntryState> = [.blocked, .pending, .inflight]
        let needed = Set(entries.values.filter { open.contains($0.state) }.flatMap { entry in
            entry.sources.filter { source in (links[entry.id] ?? []).contains { $0.parent == source } }
        })
        let ids = entries.values.filter {
            [.delivered, .superseded].contains($0.state) && ($0.finished ?? .infinity) < cutoff && !needed.contains($0.id)
        }.map(\.id)
        delete(ids, now: nil)
        return ids.count
    }

    // MARK: - Reading

    /// The stamp a store writes for people and retention: the wall clock, the fleet's on
    /// PostgreSQL (which the model's time is there).
    func stamp(_ now: Clock) -> Double {
        flavour == .postgres ? now.t : now.wall
    }

    struct Counts: Hashable {
        var pending = 0, inflight = 0, delivered = 0, dead = 0, blocked = 0, superseded = 0, conflict = 0
        var due = 0, heldByFlow = 0, inflightOrphaned = 0, stuck = 0
        var nextDue: Double?
        /// Sessions holding entries in flight that live.
        var drainers: Set<Int> = []
    }

    func counts(now: Clock) -> Counts {
        var counts = Counts()
        let held = flows.isEmpty ? nil : Set(OriginFlowBook(flowRows(now: now), inflight: inflightByOrigin(), now: now.t).heldOrigins)
        for entry in entries.values {
            switch entry.state {
            case .pending:
                counts.pending += 1
                guard !paused(entry.group) else { continue }
                counts.nextDue = min(counts.nextDue ?? entry.due, entry.due)
                guard entry.due <= now.t else { continue }
                if let held, let origin = FlowOrigin.key(ofURL: entry.url), held.contains(String(origin)) {
                    counts.heldByFlow += 1
                } else {
                    counts.due += 1
                }
            case .inflight:
                counts.inflight += 1
                if let owner = entry.owner, live.contains(owner) { counts.drainers.insert(owner) } else { counts.inflightOrphaned += 1 }
            case .delivered: counts.delivered += 1
            case .dead: counts.dead += 1
            case .blocked: counts.blocked += 1
            case .superseded: counts.superseded += 1
            case .conflict: counts.conflict += 1
            }
        }
        if counts.blocked > 0 { counts.stuck = stuck.count }
        return counts
    }

    func paused(_ group: String?) -> Bool {
        pauses.contains(nil) || group.map { pauses.contains($0) } == true
    }

    /// Pending entries a pause holds.
    var pendingHeld: Int {
        pauses.isEmpty ? 0 : entries.values.filter { $0.state == .pending && paused($0.group) }.count
    }

    struct FlowView: Hashable {
        var origin: String
        /// Seconds of pause left, when paused.
        var pausedFor: Double?
        var pauseStatus: Int?
        var concurrency: Int?
        var limit: FlowControl.OriginLimit?
        var inflight: Int
        /// The open circuit: seconds to its next probe, its failures, the last of them.
        var probeIn: Double?
        var failures: Int?
        var lastError: String?
    }

    func originFlows(now: Clock) -> [FlowView] {
        let inflight = inflightByOrigin()
        return flowRows(now: now).filter { !$0.isIdle(at: now.t) }.sorted { $0.origin < $1.origin }.map { row in
            let paused = row.isPaused(at: now.t)
            return FlowView(
                origin: row.origin, pausedFor: paused ? row.pausedUntil.map { $0 - now.t } : nil, pauseStatus: paused ? row.pauseStatus : nil,
                concurrency: row.window, limit: row.limit, inflight: inflight[row.origin[...], default: 0],
                probeIn: row.openUntil.map { $0 - now.t }, failures: row.isOpen ? row.failures : nil, lastError: row.isOpen ? row.lastFailure : nil
            )
        }
    }

    /// Whether `id` kept a response a child can read.
    func keptResponse(_ id: Int) -> Bool { kept.contains(id) && entries[id]?.state == .delivered }

    /// The invariants that hold of every state the model can be in (the store's observed
    /// state is compared with the model's, so they hold of the store too).
    func invariantViolations() -> [String] {
        var problems: [String] = []
        // Nothing in flight without a holder; FIFO: at most one open entry of a group in flight.
        var groupsInFlight: [String: Int] = [:]
        for entry in entries.values {
            if entry.state == .inflight && entry.owner == nil { problems.append("entry \(entry.id) is in flight without a holder") }
            if entry.state == .inflight, let group = entry.group {
                if let other = groupsInFlight[group] { problems.append("entries \(other) and \(entry.id) of group \(group) are in flight at once") }
                groupsInFlight[group] = entry.id
            }
        }
        // At most one entry waits under each coalescing key as an enqueue under the key left it
        // (one that failed in flight and waits for its retry may wait beside the newer edit, and
        // so may one an operator retried, or a conflict resolver's new request).
        var waiting: [String: Int] = [:]
        for entry in entries.values where [.pending, .blocked].contains(entry.state) && entry.coalesced {
            guard let key = entry.coalescing else { continue }
            waiting[key, default: 0] += 1
        }
        for (key, count) in waiting where count > 1 { problems.append("\(count) entries wait under coalescing key \(key)") }
        // No loop.
        if !stuck.isEmpty { problems.append("entries \(stuck.sorted()) wait for each other in a loop") }
        // No bucket above its burst.
        for row in flows.values {
            if let burst = row.burst, row.rate != nil, row.tokens > Double(burst) + 1e-9 {
                problems.append("origin \(row.origin) holds \(row.tokens) tokens, above its burst of \(burst)")
            }
        }
        return problems
    }
}
