import Foundation
import OfflineQueue

/// One entry as `sync list` and the dry runs of `retry` and `purge` print it in JSON; `sync
/// show` prints these keys and ``EntryDetail``'s.
struct EntrySummary: Encodable {
    var id: EntryID
    var state: String
    var method: String
    var url: String
    var attempts: Int
    @OrNull var nextAttemptAt: Timestamp?
    @OrNull var lastStatus: Int?
    @OrNull var group: String?
    var priority: Int
    var createdAt: Timestamp
    @OrNull var leaseOwner: String?
    /// The trace the entry was enqueued in, which its deliveries continue.
    @OrNull var traceID: String?
    /// Whether a pause holds it back: `sync list` only.
    var paused: Bool?

    enum CodingKeys: String, CodingKey {
        case id, state, method, url, attempts, group, priority, paused
        case nextAttemptAt = "next_attempt_at", lastStatus = "last_status", createdAt = "created_at"
        case leaseOwner = "lease_owner", traceID = "trace_id"
    }

    /// `entry` with secrets in its URL redacted unless `reveal`.
    init(_ entry: QueueEntry, reveal: Bool = false, paused: Bool? = nil) {
        id = entry.id
        state = entry.state.rawValue
        method = entry.method
        url = Output.url(entry, reveal: reveal)
        attempts = entry.attempts
        nextAttemptAt = entry.state == .pending ? Timestamp(Output.nextAttempt(entry)) : nil
        lastStatus = entry.lastStatus
        group = entry.group
        priority = entry.priority
        createdAt = Timestamp(entry.createdAt)
        leaseOwner = entry.state == .inflight ? entry.leaseOwner : nil
        traceID = entry.traceContext?.traceID
        self.paused = paused
    }
}

/// What `sync show` prints of an entry beyond ``EntrySummary``: its trace, headers, body, the
/// times of its attempts and how it ended.
struct EntryDetail: Encodable {
    @OrNull var traceparent: String?
    @OrNull var tracestate: String?
    var idempotencyKey: String
    var headers: [Header]
    var scopes: [String]
    var name: String
    @OrNull var lastAttemptAt: Timestamp?
    @OrNull var finishedAt: Timestamp?
    var waitingForNetwork: Bool
    @OrNull var leaseExpiresAt: Timestamp?
    @OrNull var deadReason: String?
    @OrNull var lastError: String?
    @OrNull var responseExcerpt: String?
    @OrNull var body: Body?
    /// A sealed entry's URL is its origin alone, its headers are empty and its body is sealed:
    /// the key id says so (`sync keys status`).
    @OrNull var sealedKeyID: String?
    var coalescingKey: String?

    enum CodingKeys: String, CodingKey {
        case traceparent, tracestate, headers, scopes, name, body
        case idempotencyKey = "idempotency_key", lastAttemptAt = "last_attempt_at", finishedAt = "finished_at"
        case waitingForNetwork = "waiting_for_network", leaseExpiresAt = "lease_expires_at", deadReason = "dead_reason"
        case lastError = "last_error", responseExcerpt = "response_excerpt", sealedKeyID = "sealed_key_id", coalescingKey = "coalescing_key"
    }

    struct Header: Encodable {
        var name: String
        var value: String
    }

    /// The body: its length and where it is stored, with its text when it is short UTF-8 in
    /// the row, the path of its file beside a SQLite database, or its `ref` in a PostgreSQL one.
    struct Body: Encodable {
        var length: Int
        var stored: String
        var text: String?
        var ref: String?
        var path: String?
    }

    /// `entry` with secret header values redacted unless `reveal`; `bodyFolder` is where body
    /// files are (a SQLite database's `.bodies` folder), `nil` for PostgreSQL.
    init(_ entry: QueueEntry, reveal: Bool, bodyFolder: String?) {
        traceparent = entry.traceContext?.traceparent
        tracestate = entry.traceContext?.tracestate
        idempotencyKey = entry.idempotencyKey
        headers = Output.headers(entry, reveal: reveal).map { Header(name: $0.0, value: $0.1) }
        scopes = entry.scopes
        name = entry.name
        lastAttemptAt = Timestamp(entry.lastAttemptAt)
        finishedAt = Timestamp(entry.finishedAt)
        waitingForNetwork = entry.waitingForNetwork
        leaseExpiresAt = Timestamp(entry.leaseExpiresAt)
        deadReason = entry.deadReason?.rawValue
        lastError = entry.lastError
        responseExcerpt = entry.responseExcerpt
        body = Self.body(entry, bodyFolder: bodyFolder)
        sealedKeyID = entry.sealKeyID
        coalescingKey = entry.coalescingKey
    }

    static func body(_ entry: QueueEntry, bodyFolder: String?) -> Body? {
        switch entry.body {
        case nil:
            return nil
        case .inline(let data):
            let text = entry.sealKeyID == nil && data.count <= 4096 ? String(data: data, encoding: .utf8) : nil
            return Body(length: entry.bodyLength ?? data.count, stored: "inline", text: text)
        case .file(let name, let length):
            // A file beside a SQLite database; chunks in the body table of a PostgreSQL one.
            let length = entry.bodyLength ?? length
            guard let bodyFolder else { return Body(length: length, stored: "apart", ref: name) }
            return Body(length: length, stored: "file", path: bodyFolder + "/" + name)
        }
    }
}
