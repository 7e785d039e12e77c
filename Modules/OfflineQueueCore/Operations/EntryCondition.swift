package import Foundation
import HTTPCore

/// One condition on a stored entry, in no store's language: what a selection or a filter
/// means is decided here, once; a database store writes each condition in its own SQL, and
/// ``holds(for:now:)`` is the meaning every store keeps (the in-memory store evaluates it).
package enum EntryCondition: Sendable, Hashable {
    case group(String)
    case name(String)
    /// The URL is on this origin (``EntryFilter/matches(origin:url:)``).
    case origin(String)
    /// The last response's status is in this range; no response, no match.
    case lastStatus(ClosedRange<Int>)
    /// Finished (or, while open, enqueued) at least this long ago, by the wall clock the
    /// stored times were written with (on PostgreSQL, the fleet's).
    case olderThan(Duration)
    /// The stored URL starts with this text, compared as is.
    case urlPrefix(String)
    case idAbove(EntryID)
    case idAtMost(EntryID)
    /// One of these ids.
    case ids([EntryID])
    /// The entry stored with this idempotency key.
    case idempotencyKey(String)
    /// Finished (or, while open, enqueued) before this time, by the wall clock the stored
    /// times were written with.
    case finishedBefore(Date)
    /// Stored in clear, or sealed under another key than this one (what a re-sealing picks).
    case seal(ResealSelection)

    /// Whether `entry` meets this condition at `now` (the wall time of the store's clock).
    package func holds(for entry: QueueEntry, now: Date) -> Bool {
        switch self {
        case .group(let group): entry.group == group
        case .name(let name): entry.name == name
        case .origin(let origin): EntryFilter.matches(origin: origin, url: entry.url)
        case .lastStatus(let range): entry.lastStatus.map(range.contains) ?? false
        case .olderThan(let age): (entry.finishedAt ?? entry.createdAt) <= now.addingTimeInterval(-age.seconds)
        case .urlPrefix(let prefix): entry.url.utf8.starts(with: prefix.utf8)
        case .idAbove(let id): entry.id > id
        case .idAtMost(let id): entry.id <= id
        case .ids(let ids): ids.contains(entry.id)
        case .idempotencyKey(let key): entry.idempotencyKey == key
        case .finishedBefore(let cutoff): (entry.finishedAt ?? entry.createdAt) < cutoff
        case .seal(.clear): entry.seal == nil
        case .seal(.notUnder(let key)): entry.seal.map { $0.keyID != key } ?? false
        }
    }
}

extension EntryFilter {
    /// What this filter asks of an entry besides its states, its limit and its cursor.
    package var conditions: [EntryCondition] {
        var conditions: [EntryCondition] = []
        if let group { conditions.append(.group(group)) }
        if let name { conditions.append(.name(name)) }
        if let origin { conditions.append(.origin(origin)) }
        return conditions
    }
}

extension EntrySelection {
    /// What this selection asks of an entry besides its states and its limit.
    package var conditions: [EntryCondition] {
        var conditions: [EntryCondition] = []
        if let group { conditions.append(.group(group)) }
        if let status { conditions.append(.lastStatus(status)) }
        if let olderThan { conditions.append(.olderThan(olderThan)) }
        if let urlPrefix { conditions.append(.urlPrefix(urlPrefix)) }
        if let name { conditions.append(.name(name)) }
        if let origin { conditions.append(.origin(origin)) }
        if let after { conditions.append(.idAbove(after)) }
        if let through { conditions.append(.idAtMost(through)) }
        if let ids { conditions.append(.ids(ids)) }
        if let finishedBefore { conditions.append(.finishedBefore(finishedBefore)) }
        return conditions
    }
}

/// What the operator's one read asks of a store (``QueueOperatorStorage/entries(_:now:)``):
/// the entries in `states` (every state when empty) past `after` matching every condition,
/// oldest first, at most `limit`. With `scanLimit`, a page: only the first `scanLimit` rows
/// (at least `limit`) of its states past `after` are examined, and the conditions matched on
/// those rows only, so a page over a million rows costs a bounded walk whatever it finds.
package struct EntryQuery: Sendable, Hashable {
    package var states: Set<EntryState>
    package var conditions: [EntryCondition]
    package var after: EntryID?
    package var limit: Int
    package var scanLimit: Int?

    package init(states: Set<EntryState> = [], conditions: [EntryCondition] = [], after: EntryID? = nil, limit: Int, scanLimit: Int? = nil) {
        self.states = states
        self.conditions = conditions
        self.after = after
        self.limit = limit
        self.scanLimit = scanLimit
    }

    package init(_ filter: EntryFilter, scanLimit: Int? = nil) {
        self.init(states: filter.states, conditions: filter.conditions, after: filter.after, limit: filter.limit, scanLimit: scanLimit)
    }
}
