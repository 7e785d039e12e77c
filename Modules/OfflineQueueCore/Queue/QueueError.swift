public import Foundation
import HTTPCore

/// Why the queue refused an operation. Nothing is half-done when one is thrown: a failed
/// enqueue leaves no row and no body behind.
///
/// A struct over a private code, as AsyncHTTPClient's `HTTPClientError` is, so that a new kind
/// is an addition, not a break of every exhaustive `switch`. Match a kind with `catch`, or by
/// switching over ``kind`` (with a `default`), and read the details from the properties:
///
/// ```swift
/// do {
///     try await queue.enqueue(request)
/// } catch QueueError.Kind.diskFull {
///     // free space, then try again
/// } catch let error as QueueError where error.kind == .secretHeader {
///     print("refused header", error.headerName ?? "")
/// }
/// ```
///
/// Errors compare equal when their kind and details are equal, so a test can expect one
/// value: `#expect(throws: QueueError.noSuchEntry(7)) { … }`.
public struct QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: one of the static members. Compare with `==`, or in a `switch` that has
    /// a `default` (kinds are added in new versions).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Code: String, Sendable, Hashable {
            case corruptDatabase, newerSchema, cannotCreate, readOnly, databaseMissing, diskFull, io
            case invalidRequest, secretHeader, noSuchEntry, entryInFlight, unavailable
            case keyUnavailable, sealBroken, noSuchDependency, dependencyCycle
        }

        fileprivate let code: Code

        /// The database exists but is not a Courier queue database (or is damaged); it was not
        /// modified. Also a row naming a body file in a form Courier never writes (such as
        /// `../queue.db`, neither read nor removed), or a row holding a value this version does
        /// not know.
        public static let corruptDatabase = Kind(code: .corruptDatabase)
        /// The database was written by a newer Courier, whose schema this one does not know.
        public static let newerSchema = Kind(code: .newerSchema)
        /// The database (or its body folder) could not be created or opened for writing; also a
        /// body folder that is a symbolic link or open to other users.
        public static let cannotCreate = Kind(code: .cannotCreate)
        /// A write to a queue opened with ``QueueConfiguration/readOnly``.
        public static let readOnly = Kind(code: .readOnly)
        /// A read-only command was pointed at a database that does not exist.
        public static let databaseMissing = Kind(code: .databaseMissing)
        /// The disk is full; the operation was rolled back.
        public static let diskFull = Kind(code: .diskFull)
        /// Reading or writing failed for another reason.
        public static let io = Kind(code: .io)
        /// The request cannot be stored: an invalid URL, method or header, or an endpoint the
        /// client cannot build (the reason gives the client's error).
        public static let invalidRequest = Kind(code: .invalidRequest)
        /// A header holds a secret and the queue is set to refuse storing secrets.
        public static let secretHeader = Kind(code: .secretHeader)
        /// No entry has this id.
        public static let noSuchEntry = Kind(code: .noSuchEntry)
        /// The entry is in flight under a live lease and cannot be changed now.
        public static let entryInFlight = Kind(code: .entryInFlight)
        /// The database server cannot be reached (refused, timed out, shutting down, or the
        /// login failed). Nothing was stored or changed; try again once it is back.
        public static let unavailable = Kind(code: .unavailable)
        /// The keys the queue needs are not there: no keyring, a key id missing from it, other
        /// bytes under a known id, or entries in clear in a queue that requires sealing.
        /// Nothing in the queue was changed.
        public static let keyUnavailable = Kind(code: .keyUnavailable)
        /// A sealed entry failed to open (its bytes were changed, cut or moved): it was left
        /// as it is, unsent, its attempts unchanged.
        public static let sealBroken = Kind(code: .sealBroken)
        /// An enqueued entry names an entry to wait for (``EnqueueOptions/after``) that the
        /// queue does not hold. Nothing was stored.
        public static let noSuchDependency = Kind(code: .noSuchDependency)
        /// An enqueue would make an entry wait for itself: it names its own id among those it
        /// waits for (``EnqueueOptions/after``), or, replacing the entry waiting under its
        /// coalescing key, names an entry that waits for that one. Such an entry would never be
        /// sent. Nothing was stored.
        public static let dependencyCycle = Kind(code: .dependencyCycle)

        /// The kind's name, such as `diskFull`.
        public var description: String { code.rawValue }

        /// `catch QueueError.Kind.diskFull`: an error of this kind.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? QueueError)?.kind == kind
        }

        /// The same, where the error's type is known (a `do throws(QueueError)`).
        public static func ~= (kind: Kind, error: QueueError) -> Bool {
            error.kind == kind
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// The database's path, or for PostgreSQL its URL without the password, when the error
    /// concerns the database.
    public let path: String?
    /// Why, in words, for the kinds that say: `corruptDatabase`, `cannotCreate`, `io`,
    /// `invalidRequest`, `unavailable`.
    public let reason: String?
    /// The entry, for `noSuchEntry`, `entryInFlight`, `sealBroken` and `noSuchDependency`; for
    /// `dependencyCycle`, the entry that would wait for itself.
    public let entryID: EntryID?
    /// For `dependencyCycle`: the loop, from the entry round to itself, each waiting for the
    /// next (`[1, 2, 1]`: 1 would wait for 2, which waits for 1).
    public let loop: [EntryID]?
    /// The header refused, for `secretHeader`.
    public let headerName: String?
    /// For `newerSchema`: the database's schema version, and the newest this version understands.
    public let foundVersion: Int?
    /// For `newerSchema`: the newest schema version this version understands.
    public let supportedVersion: Int?

    private init(
        _ code: Kind.Code, path: String? = nil, reason: String? = nil, entryID: EntryID? = nil, headerName: String? = nil,
        found: Int? = nil, supported: Int? = nil, loop: [EntryID]? = nil
    ) {
        self.loop = loop
        kind = Kind(code: code)
        self.path = path
        self.reason = reason
        self.entryID = entryID
        self.headerName = headerName
        foundVersion = found
        supportedVersion = supported
    }

    /// A `corruptDatabase` error: `path` is not a queue database, or is damaged, as `reason` says.
    public static func corruptDatabase(path: String, reason: String) -> QueueError { QueueError(.corruptDatabase, path: path, reason: reason) }
    /// A `newerSchema` error: `path` has schema version `found`, newer than `supported`.
    public static func newerSchema(path: String, found: Int, supported: Int) -> QueueError {
        QueueError(.newerSchema, path: path, found: found, supported: supported)
    }
    /// A `cannotCreate` error: `path` could not be created or opened for writing, for `reason`.
    public static func cannotCreate(path: String, reason: String) -> QueueError { QueueError(.cannotCreate, path: path, reason: reason) }
    /// A `readOnly` error: a write to the queue at `path`, which was opened read-only.
    public static func readOnly(path: String) -> QueueError { QueueError(.readOnly, path: path) }
    /// A `databaseMissing` error: there is no queue database at `path`.
    public static func databaseMissing(path: String) -> QueueError { QueueError(.databaseMissing, path: path) }
    /// A `diskFull` error: the disk holding `path` is full.
    public static func diskFull(path: String) -> QueueError { QueueError(.diskFull, path: path) }
    /// An `io` error: reading or writing `path` failed, for `reason`.
    public static func io(path: String, reason: String) -> QueueError { QueueError(.io, path: path, reason: reason) }
    /// An `invalidRequest` error: the request cannot be stored, for `reason`.
    public static func invalidRequest(_ reason: String) -> QueueError { QueueError(.invalidRequest, reason: reason) }
    /// A `secretHeader` error: the header `name` holds a secret the queue refuses to store.
    public static func secretHeader(name: String) -> QueueError { QueueError(.secretHeader, headerName: name) }
    /// A `noSuchEntry` error: no entry has the id `id`.
    public static func noSuchEntry(_ id: EntryID) -> QueueError { QueueError(.noSuchEntry, entryID: id) }
    /// An `entryInFlight` error: the entry `id` is being sent under a live lease.
    public static func entryInFlight(_ id: EntryID) -> QueueError { QueueError(.entryInFlight, entryID: id) }
    /// `location` is the database's URL without its password.
    public static func unavailable(location: String, reason: String) -> QueueError { QueueError(.unavailable, path: location, reason: reason) }
    /// A `keyUnavailable` error: the keys the queue needs are not there, as `reason` says.
    public static func keyUnavailable(_ reason: String) -> QueueError { QueueError(.keyUnavailable, reason: reason) }
    /// A `sealBroken` error: the entry `id` failed to open, for `reason`, and was left as it is.
    public static func sealBroken(_ id: EntryID, reason: String) -> QueueError { QueueError(.sealBroken, reason: reason, entryID: id) }
    /// A `noSuchDependency` error: the queue holds no entry `id` for an enqueue to wait for.
    public static func noSuchDependency(_ id: EntryID) -> QueueError { QueueError(.noSuchDependency, entryID: id) }
    /// A `dependencyCycle` error: the enqueue would close `loop`, from an entry round to itself.
    public static func dependencyCycle(_ loop: [EntryID]) -> QueueError { QueueError(.dependencyCycle, entryID: loop.first, loop: loop) }

    public var description: String {
        let path = path ?? "?", reason = reason ?? "", id = entryID.map(String.init) ?? "?"
        return switch kind.code {
        case .corruptDatabase: "\(path) is not a valid queue database (\(reason)); nothing in it was changed"
        case .newerSchema:
            "\(path) has schema version \(foundVersion ?? 0), newer than the \(supportedVersion ?? 0) this version understands; upgrade Courier to use it"
        case .cannotCreate: "cannot create or open \(path) for writing: \(reason)"
        case .readOnly: "cannot write to \(path): the queue was opened read-only"
        case .databaseMissing: "no queue database at \(path)"
        case .diskFull: "the disk holding \(path) is full; nothing was stored"
        case .io: "I/O error on \(path): \(reason)"
        case .invalidRequest: "invalid request: \(reason)"
        case .secretHeader: "header \(headerName ?? "?") holds a secret, which is not stored by default"
        case .noSuchEntry: "no entry with id \(id)"
        case .entryInFlight: "entry \(id) is being sent by a drainer right now"
        case .unavailable: "cannot reach the queue's database at \(path): \(reason); nothing was changed"
        case .keyUnavailable: "\(reason); nothing in the queue was changed"
        case .sealBroken: "entry \(id) cannot be opened (\(reason)): it was left as it is, unsent"
        case .noSuchDependency: "the queue holds no entry \(id) to wait for (--after); nothing was stored"
        case .dependencyCycle:
            if let loop, loop.count == 2 {
                "entry \(id) would wait for itself (--after \(id) names the entry being enqueued), and never be sent; nothing was stored"
            } else {
                "entry \(id) would wait for itself, and never be sent: \(Self.words(loop ?? [])); nothing was stored"
            }
        }
    }
}

extension QueueError {
    /// `[1, 2, 3, 1]` as "1 waits for 2, which waits for 3, which waits for 1".
    private static func words(_ loop: [EntryID]) -> String {
        guard let first = loop.first else { return "" }
        return loop.dropFirst().enumerated().reduce("\(first)") { text, step in
            text + (step.offset == 0 ? " waits for \(step.element)" : ", which waits for \(step.element)")
        }
    }
}

extension QueueError: LocalizedError {
    public var errorDescription: String? { description }
}
