import Foundation
import GRDB
import HTTPCore

/// The drain's side of the store: claims under a lease, results recorded in batches, entries
/// taken back from drainers that died, and entries woken when the network is back.
///
/// Every time rule here compares boot-clock readings (`*_uptime` columns, see ``QueueTime``);
/// wall-clock columns are written for people and for carrying rows over a reboot.
extension SQLiteQueueStore {
    /// Records `settlements` and claims up to `claimLimit` entries, in one transaction: the
    /// drain loop's single commit per turn.
    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int,
        lease: Duration, attemptedSince: Double?, chores: ClaimChores = ClaimChores()
    ) async throws(QueueError) -> ClaimResult {
        if let done = try await commitWithoutClaim(settlements, now: now, lease: lease, chores: chores) { return done }
        let owner = self.owner
        guard !settlements.isEmpty || claimLimit > 0 || chores.carryOver || chores.reclaimOrphans else { return ClaimResult() }
        let path = self.path
        defer { if settlements.contains(where: \.ends) { ringSettled() } }
        let result = try await write { db in
            var result = ClaimResult()
            if !settlements.isEmpty { (result.opened, result.closed) = try Self.recordFlow(db, settlements, owner: owner, now: now, settings: chores.flow) }
            result.lost = try Self.settle(db, settlements, owner: owner, now: now)
            if chores.carryOver { try Self.carryOver(db, now: now, maxDelay: chores.maxDelay) }
            if chores.reclaimOrphans { result.reclaimed = try Self.reclaimOrphans(db, owner: owner, now: now, databasePath: path) }
            if claimLimit > 0 {
                if chores.reclaimOrphans { try Self.returnLapsedLeases(db, owner: owner, now: now) }
                let claimed = try Self.claim(
                    db, limit: claimLimit, owner: owner, now: now, lease: lease, attemptedSince: attemptedSince, databasePath: path,
                    flow: &result
                )
                result.claimed = claimed
            }
            return result
        }
        // A circuit closed: every process's drainers claim, so the backlog flows from all of them.
        if !result.closed.isEmpty { ringWake() }
        return result
    }

    /// Rows last written in another boot (or by a schema without boot readings) get readings of
    /// this boot: the age they had by the wall clock (never below zero), and what was left of
    /// their wait by the wall clock (never below zero, never above `maxDelay`, so a clock that
    /// was far ahead cannot stall them). Their claims died with that boot.
    ///
    /// `queue_meta.clock_boot` names the boot every open row is on, when they all are on one:
    /// when it is this one, there is nothing to carry over and no row is read.
    static func carryOver(_ db: Database, now: QueueTime, maxDelay: Duration) throws {
        // A lease's readings are on the clock of the boot that took it; the attempt it started
        // stays recorded by its wall time. One statement when there is none (every drain's start).
        let ended = try Row.fetchAll(db.cachedStatement(sql: "DELETE FROM lease WHERE boot IS NOT ? RETURNING entry_id, attempt_wall"), arguments: [now.boot])
        for lease in ended {
            try db.cachedStatement(sql: "UPDATE entry SET last_attempt_at = ? WHERE id = ?").execute(arguments: [lease[1], lease[0]])
        }
        let mark = try Row.fetchOne(db.cachedStatement(sql: "SELECT clock_boot FROM queue_meta"))
        if let mark, mark[0] as String? == now.boot { return }
        try db.cachedStatement(sql: """
            UPDATE entry INDEXED BY entry_pending SET
                budget_uptime = :uptime - MAX(0, :wall - budget_from),
                due_uptime = :uptime + MIN(MAX(0, next_attempt_at - :wall), :maxDelay),
                attempt_uptime = NULL, clock_boot = :boot
            WHERE state = 'pending' AND (clock_boot IS NULL OR clock_boot <> :boot)
            """).execute(arguments: ["uptime": now.uptime, "wall": now.wall.timeIntervalSince1970, "maxDelay": maxDelay.seconds, "boot": now.boot])
        try db.cachedStatement(sql: "UPDATE queue_meta SET clock_boot = ?").execute(arguments: [now.boot])
    }

    /// A row whose budget starts in the future of this boot's clock was written by a process
    /// whose clock could not be trusted (its boot clock was faked, say): its age counts from
    /// now, and it keeps only the wait it was given relative to its own reading. `ids` are such
    /// rows a claim met (see ``claim(_:limit:owner:now:lease:attemptedSince:databasePath:heldFor:pausedOrigins:)``).
    static func rebaseUntrustedReadings(_ db: Database, _ ids: [EntryID], now: QueueTime) throws {
        try db.cachedStatement(sql: """
            UPDATE entry SET due_uptime = :uptime + MAX(0, due_uptime - budget_uptime), budget_uptime = :uptime
            WHERE id IN (SELECT value FROM json_each(:ids)) AND budget_uptime > :uptime
            """).execute(arguments: ["uptime": now.uptime, "ids": list(ids)])
    }

    /// Entries in flight under drainers that are gone go back to pending at once, nothing
    /// counted. Returns how many.
    static func reclaimOrphans(_ db: Database, owner: String, now: QueueTime, databasePath: String) throws -> Int {
        let owners = try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT owner FROM lease WHERE owner <> ?"), arguments: [owner])
        var reclaimed = 0
        for other in owners where OwnerLock.liveness(of: other, databasePath: databasePath, boot: now.boot, takeOver: true) == .gone {
            try db.cachedStatement(sql: """
                UPDATE entry SET last_error = 'taken back from ' || :owner || ', a drainer that is gone',
                    last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
                FROM lease WHERE lease.entry_id = entry.id AND lease.owner = :owner
                """).execute(arguments: ["owner": other])
            try db.cachedStatement(sql: "DELETE FROM lease WHERE owner = ?").execute(arguments: [other])
            reclaimed += db.changesCount
        }
        return reclaimed
    }

    /// The lapsed leases of other drainers (one that lives but hangs; its own are renewed or
    /// lost) go back to pending; the attempt each one started stays recorded, as for the
    /// entries of a drainer that is gone.
    /// One statement when none has lapsed (each reclaim chore).
    static func returnLapsedLeases(_ db: Database, owner: String, now: QueueTime) throws {
        let lapsed = try Row.fetchAll(
            db.cachedStatement(sql: "DELETE FROM lease WHERE until_uptime < ? AND owner <> ? RETURNING entry_id, attempt_wall, attempt_uptime"),
            arguments: [now.uptime, owner]
        )
        for lease in lapsed {
            try db.cachedStatement(sql: "UPDATE entry SET last_attempt_at = ?, attempt_uptime = ? WHERE id = ?").execute(arguments: [lease[1], lease[2], lease[0]])
        }
    }

    /// Claims up to `limit` due entries for `owner` for `lease`: the highest priority first,
    /// then the oldest, only the first open entry of each group and only while none of the group
    /// is in flight (an older entry an operator retried waits for the newer one in flight; the
    /// leases are few, so the look is short), and none that a pause holds back.
    ///
    /// A claim is a `lease` row per entry; the entry's own row is not written until it is
    /// settled, so a claim touches none of its indexes.
    ///
    /// - Parameter attemptedSince: when set, skips entries attempted at or after this boot-clock
    ///   reading (for a drain that tries each entry once).
    ///
    /// When an origin's flow is held (``FlowControl``), the walk passes over the entries of
    /// origins paused or at their limit, debits the buckets of those it takes, and sets
    /// `heldFor`; it walks at most ``flowWalk`` rows past the limit.
    ///
    /// The walk also meets rows whose readings lie ahead of this clock (``rebaseUntrustedReadings(_:_:now:)``):
    /// it rebases them, and claims those given no wait. Every pending row it passes is read for
    /// its due time anyway, so this costs nothing more; a claim that finds nothing has walked
    /// every pending row it could claim, so a drain does not end with such a row left behind.
    /// (Schema 8 to 17 rebased at each drain's start instead, reading every pending row: 1.6 to
    /// 3.9 s at 2,000,000.)
    static func claim(
        _ db: Database, limit: Int, owner: String, now: QueueTime, lease: Duration, attemptedSince: Double?, databasePath path: String,
        flow result: inout ClaimResult
    ) throws -> [QueueEntry] {
        let onceClause = attemptedSince == nil ? "" : "AND (e.attempt_uptime IS NULL OR e.attempt_uptime < :since)"
        var book = try hasFlowRows(db) ? OriginFlowBook(flowRows(db, now: now), inflight: inflightByOrigin(db), now: now.uptime) : nil
        // The entries as a claim shows them, in claim order: in flight under `owner` until the
        // lease ends. `extra` narrows them (an origin's, for its probe; none of an open
        // circuit's, for the walk).
        func statement(_ extra: String) throws -> Statement {
            try db.cachedStatement(sql: """
                SELECT \(EntryColumn.claimSelection), e.due_uptime - e.budget_uptime FROM entry AS e INDEXED BY entry_pending
                WHERE e.state = 'pending' AND (e.due_uptime <= :uptime OR e.budget_uptime > :uptime) \(onceClause) AND \(notPaused("e"))
                AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = e.id)
                AND (e.group_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM entry AS p INDEXED BY entry_group_open
                    WHERE p.group_key = e.group_key AND p.id < e.id AND p.state IN \(Schema.groupOpenStates))
                    AND NOT EXISTS (SELECT 1 FROM lease AS l CROSS JOIN entry AS q ON q.id = l.entry_id WHERE q.group_key = e.group_key))\(extra)
                ORDER BY e.priority DESC, e.id
                LIMIT :limit
                """)
        }
        let until = now.uptime + lease.seconds, untilWall = now.wall.timeIntervalSince1970 + lease.seconds
        let wall = now.wall.timeIntervalSince1970
        let walk = book == nil ? limit : limit + flowWalk
        var arguments: StatementArguments = ["untilWall": untilWall, "wall": wall, "uptime": now.uptime, "limit": walk]
        if let attemptedSince { _ = arguments.append(contentsOf: ["since": attemptedSince]) }
        var claimed: [QueueEntry] = []
        claimed.reserveCapacity(limit)
        // Each open circuit's probe first: the first of its origin's due entries (a row whose
        // readings need rebasing waits for the walk of a later claim). Then the walk, which
        // never meets an open circuit's entries: a backlog of them would fill it for good.
        var walking = try statement("")
        if let open = book?.openOrigins, !open.isEmpty {
            let ofOrigin = "(e.url = :origin OR substr(e.url, 1, length(:origin) + 1) IN (:origin || '/', :origin || '?', :origin || '#'))"
            for origin in book!.probingOrigins where claimed.count < limit {
                var probeArguments = arguments
                _ = probeArguments.append(contentsOf: ["origin": origin, "limit": 1])
                let probeStatement = try statement("\nAND e.due_uptime <= :uptime AND e.budget_uptime <= :uptime AND \(ofOrigin)")
                guard let row = try Row.fetchOne(probeStatement, arguments: probeArguments),
                      book!.admission(url: row[EntryColumn.url.rawValue]) == .probe else { continue }
                var entry = try QueueEntry(row: row, path: path)
                result.probes.insert(entry.id)
                entry.leaseOwner = owner
                claimed.append(entry)
            }
            walking = try statement("""

                AND NOT EXISTS (SELECT 1 FROM json_each(:open) AS o
                    WHERE e.url = o.value OR substr(e.url, 1, length(o.value) + 1) IN (o.value || '/', o.value || '?', o.value || '#'))
                """)
            _ = arguments.append(contentsOf: ["open": Self.jsonArray(open)])
        }
        // Each row decoded straight from the statement, not copied into a `Row` first; the
        // statement walks the claim order, so the entries come in it.
        var taken = Set(claimed.map(\.id))
        while true {
            var ahead: [EntryID] = [], seen = 0, waiting = 0
            let rows = try Row.fetchCursor(walking, arguments: arguments)
            while claimed.count < limit, let row = try rows.next() {
                seen += 1
                if !taken.isEmpty, taken.contains(row[EntryColumn.id.rawValue]) { continue }
                if row[EntryColumn.budgetUptime.rawValue] as Double? ?? 0 > now.uptime {
                    ahead.append(row[EntryColumn.id.rawValue])
                    // Due once the wait it was given has passed from now.
                    if row[Self.claimWait] as Double? ?? 0 > 0 {
                        waiting += 1
                        continue
                    }
                }
                if book != nil, !book!.admit(url: row[EntryColumn.url.rawValue]) { continue }
                var entry = try QueueEntry(row: row, path: path)
                // The owner's one string, shared by every claimed entry, rather than a copy a row.
                entry.leaseOwner = owner
                claimed.append(entry)
            }
            guard !ahead.isEmpty else { break }
            try rebaseUntrustedReadings(db, ahead, now: now)
            // Rows given a wait filled the walk: walk again, past them (rebased, they are not
            // met again unless due), and past the rows taken already.
            guard waiting > 0, seen == walk, claimed.count < limit else { break }
            taken = Set(claimed.map(\.id))
        }
        if let book {
            let (changed, idle) = book.written()
            try writeFlows(db, changed, idle: idle, now: now)
            result.heldFor = book.heldFor
            result.probeIn = book.probeIn
            result.pausedOrigins = book.pausedOrigins
        }
        guard !claimed.isEmpty else { return [] }
        try db.cachedStatement(sql: """
            INSERT INTO lease (entry_id, owner, boot, until_uptime, until_wall, attempt_wall, attempt_uptime)
            SELECT value, :owner, :boot, :until, :untilWall, :wall, :uptime FROM json_each(:ids)
            """).execute(arguments: [
                "owner": owner, "boot": now.boot, "until": until, "untilWall": untilWall, "wall": wall, "uptime": now.uptime,
                "ids": list(claimed.map(\.id)),
            ])
        return claimed
    }

    /// The claim's column after the entry's: the wait a row was given (`due_uptime -
    /// budget_uptime`).
    static let claimWait = EntryColumn.allCases.count

    /// Rows a claim walks past its limit when origins' flows are held: entries of a paused or
    /// limited origin passed over without end would make every claim read the backlog.
    static let flowWalk = 4096

    /// `ids` as a JSON array, for `json_each`.
    static func list(_ ids: some Collection<EntryID>) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    /// `strings` as a JSON array, for `json_each`.
    static func jsonArray(_ strings: [String]) -> String {
        (try? JSONEncoder().encode(strings)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// Applies `settlements` of `owner`'s claims in one transaction. A settlement whose lease
    /// `owner` no longer holds (it lapsed and another drainer claimed the entry) changes
    /// nothing; the ids of those are returned.
    @discardableResult
    func recordSettlements(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        try await settleRecordingFlow(settlements, now: now)
    }

    static func settle(_ db: Database, _ settlements: [Settlement], owner: String, now: QueueTime) throws -> Set<EntryID> {
        var lost: Set<EntryID> = []
        let wall = now.wall.timeIntervalSince1970
        // Deliveries, the common case, in one statement per status.
        var deliveries: [Int: [EntryID]] = [:]
        var others: [Settlement] = []
        for settlement in settlements {
            if case .deliver(let status) = settlement.transition {
                deliveries[status, default: []].append(settlement.id)
            } else {
                others.append(settlement)
            }
        }
        // An entry is settled only under a lease `owner` still holds; the row takes the
        // attempt's time from the lease, which then goes.
        // Each delivered row comes back with whether others wait for it; the trigger
        // `entry_delivered` marks their links in the same statement, so a delivery with no
        // children costs no statement more.
        let deliver = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'delivered', attempts = attempts + 1, finished_at = :now, last_status = :status,
                last_error = NULL, waiting_network = 0, last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
            FROM lease WHERE lease.entry_id = entry.id AND lease.owner = :owner AND entry.id IN (SELECT value FROM json_each(:ids))
            RETURNING entry.id, EXISTS (SELECT 1 FROM entry_edge WHERE entry_edge.parent = entry.id)
            """)
        let unlease = try db.cachedStatement(sql: "DELETE FROM lease WHERE owner = :owner AND entry_id IN (SELECT value FROM json_each(:ids))")
        // Entries that wait for a settled one are decided once the settlements are recorded.
        var children: [EntryID] = []
        var keeps = false
        for (status, ids) in deliveries {
            let list = list(ids)
            var recorded: Set<EntryID> = []
            var parents: [EntryID] = []
            let rows = try Row.fetchCursor(deliver, arguments: ["now": wall, "status": status, "ids": list, "owner": owner])
            while let row = try rows.next() {
                let id: EntryID = row[0]
                recorded.insert(id)
                if row[1] as Bool { parents.append(id) }
            }
            try unlease.execute(arguments: ["owner": owner, "ids": list])
            lost.formUnion(ids.filter { !recorded.contains($0) })
            if !parents.isEmpty { children += try Self.children(db, of: Self.list(parents)) }
            keeps = keeps || !recorded.isEmpty
        }
        // The responses deliveries keep, in the transaction that records them.
        if keeps && settlements.contains(where: { $0.kept != nil }) {
            try keepResponses(db, settlements, delivered: Set(settlements.map(\.id)).subtracting(lost))
        }
        for settlement in others {
            let arguments: StatementArguments
            let sql: String
            switch settlement.transition {
            case .deliver:
                continue   // recorded above
            case .retry(let retry):
                sql = """
                    UPDATE entry SET attempts = attempts + ?, next_attempt_at = ?, due_uptime = ?,
                        waiting_network = ?, last_status = ?, last_error = ?, response_excerpt = ?,
                        last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
                    FROM lease WHERE lease.entry_id = entry.id AND entry.id = ? AND lease.owner = ?
                    """
                arguments = [
                    retry.consumesAttempt ? 1 : 0, wall + retry.after.seconds, now.uptime + retry.after.seconds, retry.waitingForNetwork,
                    retry.status, retry.error, retry.excerpt, settlement.id, owner,
                ]
            case .deadLetter(let dead):
                sql = """
                    UPDATE entry SET state = 'dead', attempts = attempts + ?, finished_at = ?, last_status = ?,
                        dead_reason = ?, last_error = ?, response_excerpt = ?, waiting_network = 0,
                        last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
                    FROM lease WHERE lease.entry_id = entry.id AND entry.id = ? AND lease.owner = ?
                    """
                arguments = [dead.consumesAttempt ? 1 : 0, wall, dead.status, dead.reason.rawValue, dead.error, dead.excerpt, settlement.id, owner]
            case .release:
                sql = """
                    UPDATE entry SET last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
                    FROM lease WHERE lease.entry_id = entry.id AND entry.id = ? AND lease.owner = ?
                    """
                arguments = [settlement.id, owner]
            case .conflict(let conflict), .drop(let conflict):
                // Left for an operator, or dropped by the app's resolver (superseded).
                let dropped = if case .drop = settlement.transition { true } else { false }
                sql = """
                    UPDATE entry SET state = ?, attempts = attempts + 1, finished_at = ?, last_status = ?, last_error = ?,
                        response_excerpt = ?, waiting_network = 0, last_attempt_at = lease.attempt_wall, attempt_uptime = lease.attempt_uptime
                    FROM lease WHERE lease.entry_id = entry.id AND entry.id = ? AND lease.owner = ?
                    """
                arguments = [
                    dropped ? EntryState.superseded.rawValue : EntryState.conflict.rawValue, wall, conflict.status, conflict.error,
                    conflict.excerpt, settlement.id, owner,
                ]
            }
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            if db.changesCount == 0 {
                lost.insert(settlement.id)
            } else {
                try db.cachedStatement(sql: "DELETE FROM lease WHERE entry_id = ?").execute(arguments: [settlement.id])
                switch settlement.transition {
                case .deadLetter, .drop: children += try Self.children(db, of: list([settlement.id]))
                default: break
                }
                if let replacement = settlement.replacement {
                    _ = try replace(db, settlement.id, with: replacement.entry, supersededReason: replacement.reason, now: now)
                }
            }
        }
        if !children.isEmpty { try resolve(db, children, now: now) }
        return lost
    }

    func holdDiskReserve() async throws(QueueError) {
        if readOnly { throw Self.readOnlyRefusal(path) }
        let reserve = self.reserve
        // On the writer's queue: off the cooperative threads, and after the commits before it.
        do {
            _ = try await pool.writeWithoutTransaction { _ in try reserve.hold() }
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    /// Gives the reserve back, then writes one settlement per transaction, the outcomes of
    /// sends first as the drain orders them, each followed by a checkpoint: once the log is
    /// copied back whole, the next transaction writes it from its start again, over blocks it
    /// already holds, so the space needed at once is one settlement's, whatever their number
    /// (``DiskReserve/size(inlineBodyLimit:)``).
    func recordOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        if readOnly { throw Self.readOnlyRefusal(path) }
        let owner = self.owner
        let reserve = self.reserve
        defer { if settlements.contains(where: \.ends) { ringSettled() } }
        do {
            return try await pool.writeWithoutTransaction { db in
                reserve.release()
                Self.restartLog(db)
                var lost: Set<EntryID> = []
                for settlement in settlements {
                    try db.inImmediateTransaction {
                        lost.formUnion(try Self.settle(db, [settlement], owner: owner, now: now))
                    }
                    Self.restartLog(db)
                }
                return lost
            }
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    /// Copies the log back into the file without waiting for readers, so that the next
    /// transaction starts the log over. Best effort: on a full disk the copy may need pages the
    /// file cannot grow by, and a reader in another process may still use the log; the log
    /// then grows into the reserve instead.
    private static func restartLog(_ db: Database) {
        _ = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
    }

    /// Entries waiting only for the network become due now. Returns how many.
    @discardableResult
    func wakeWaiters(now: QueueTime) async throws(QueueError) -> Int {
        try await write { db in
            try db.execute(sql: """
                UPDATE entry INDEXED BY entry_network_wait SET next_attempt_at = ?, due_uptime = ?, waiting_network = 0
                WHERE state = 'pending' AND waiting_network = 1 AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
                """, arguments: [now.wall.timeIntervalSince1970, now.uptime])
            return db.changesCount
        }
    }

    /// Extends ``owner``'s leases on `ids` to `lease` from `now`; entries whose lease `owner`
    /// lost are left alone.
    func extendLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
        guard !ids.isEmpty else { return }
        let owner = self.owner
        let list = Self.list(ids)
        try await write { db in
            try db.cachedStatement(sql: """
                UPDATE lease SET until_uptime = :until, until_wall = :untilWall
                WHERE entry_id IN (SELECT value FROM json_each(:ids)) AND owner = :owner
                """).execute(arguments: [
                    "until": now.uptime + lease.seconds, "untilWall": now.wall.timeIntervalSince1970 + lease.seconds,
                    "ids": list, "owner": owner,
                ])
        }
    }
}
