public import Foundation

/// One minute of a queue's recent past, as the console's chart draws it: the attempts that
/// delivered and that failed in it, and the backlog as last seen in it.
///
/// Kept as per-minute counters, not read from the entries: each drainer counts what its commits
/// settle and adds it to the minute's row now and then (at most every 10 seconds, and when
/// the queue closes); the backlog is the count of pending and due entries the last time anyone
/// read the counts in that minute (a service reads them every half minute). A `kill -9` loses
/// what its drainer had not added yet: at most ten seconds of one drainer's counts.
///
/// ```swift
/// for minute in try await queue.activity() where minute.failed > 0 {
///     print(minute.minute, minute.delivered, "delivered,", minute.failed, "failed")
/// }
/// ```
public struct ActivityMinute: Sendable, Hashable, Codable {
    /// When the minute began: a wall-clock time on a whole minute (UTC).
    public var minute: Date
    /// Attempts that delivered their entry in this minute.
    public var delivered: Int
    /// Attempts that failed in this minute: their entry will be tried again, went dead, or
    /// waits for an operator.
    public var failed: Int
    /// Pending entries, as last counted in this minute; `nil` when nobody counted them then.
    public var pending: Int?
    /// Entries due to be sent, as last counted in this minute; `nil` when nobody counted them.
    public var due: Int?

    /// A minute with the counts given; nothing delivered or failed, and no backlog seen, by default.
    public init(minute: Date, delivered: Int = 0, failed: Int = 0, pending: Int? = nil, due: Int? = nil) {
        self.minute = minute
        self.delivered = delivered
        self.failed = failed
        self.pending = pending
        self.due = due
    }

    /// The minute's number since 1970, as the stores key their rows.
    package var number: Int64 { Self.number(of: minute) }

    /// The number of the minute `date` falls in, since 1970.
    package static func number(of date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 60).rounded(.down)) }

    /// The start of minute `number`.
    package static func start(of number: Int64) -> Date { Date(timeIntervalSince1970: Double(number) * 60) }

    /// Adds `other`'s counts; its backlog, when it has one, replaces this one's (it is newer).
    package mutating func add(_ other: ActivityMinute) {
        delivered += other.delivered
        failed += other.failed
        if let pending = other.pending { self.pending = pending }
        if let due = other.due { self.due = due }
    }

    /// The last `count` minutes up to the one `now` falls in, oldest first: each from `rows`
    /// where a row is kept, empty otherwise.
    package static func series(_ rows: [ActivityMinute], count: Int, now: Date) -> [ActivityMinute] {
        let last = number(of: now)
        var byNumber: [Int64: ActivityMinute] = [:]
        for row in rows { byNumber[row.number, default: ActivityMinute(minute: row.minute)].add(row) }
        return (0..<Int64(max(count, 0))).reversed().map { back in
            let number = last - back
            return byNumber[number] ?? ActivityMinute(minute: start(of: number))
        }
    }
}
