public import Foundation
public import HTTPCore

/// Why the queue refused an operation. Nothing is half-done when one is thrown: a failed
/// enqueue leaves no row and no body file behind.
public enum QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file exists but is not a Courier queue database (or is damaged). It was not
    /// modified.
    ///
    /// Also thrown for a row naming a body file in a form Courier never writes (such as
    /// `../queue.db`): that file is neither read nor removed.
    case corruptDatabase(path: String, reason: String)
    /// The file was written by a newer Courier, whose schema this one does not know.
    case newerSchema(path: String, found: Int, supported: Int)
    /// The database (or its body folder) could not be created or opened for writing.
    ///
    /// Also what a queue opened with ``QueueConfiguration/readOnly`` throws for every write
    /// (reason "the queue was opened read-only"), and what opening throws for a body folder
    /// that is a symbolic link or open to other users (reason "refusing the body folder: …").
    case cannotCreate(path: String, reason: String)
    /// A read-only command was pointed at a database that does not exist.
    case databaseMissing(path: String)
    /// The disk is full; the operation was rolled back.
    case diskFull(path: String)
    /// Reading or writing failed for another reason.
    case io(path: String, reason: String)
    /// The request cannot be stored: an invalid URL, method or header, or an endpoint the
    /// client cannot build (the reason gives the client's error).
    case invalidRequest(String)
    /// A header holds a secret and the queue is set to refuse storing secrets.
    case secretHeader(name: String)
    /// No entry has this id.
    case noSuchEntry(EntryID)
    /// The entry is in flight under a live lease and cannot be changed now.
    case entryInFlight(EntryID)
    /// The database server cannot be reached (refused, timed out, shutting down, or the login
    /// failed). Nothing was stored or changed; try again once it is back. `location` is the
    /// database's URL without its password.
    case unavailable(location: String, reason: String)

    public var description: String {
        switch self {
        case .corruptDatabase(let path, let reason): "\(path) is not a valid queue database (\(reason)); the file was left untouched"
        case .newerSchema(let path, let found, let supported): "\(path) has schema version \(found), newer than the \(supported) this version understands; upgrade Courier to use it"
        case .cannotCreate(let path, let reason): "cannot create or open \(path) for writing: \(reason)"
        case .databaseMissing(let path): "no queue database at \(path)"
        case .diskFull(let path): "the disk holding \(path) is full; nothing was stored"
        case .io(let path, let reason): "I/O error on \(path): \(reason)"
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .secretHeader(let name): "header \(name) holds a secret, which is not stored by default"
        case .noSuchEntry(let id): "no entry with id \(id)"
        case .entryInFlight(let id): "entry \(id) is being sent by a drainer right now"
        case .unavailable(let location, let reason): "cannot reach the queue's database at \(location): \(reason); nothing was changed"
        }
    }
}

extension QueueError: LocalizedError {
    public var errorDescription: String? { description }
}

/// Why ``OfflineQueue/send(_:options:)`` failed: the call made online, a header template, or
/// the store. Nothing is half done: the request was either not sent or not stored.
public enum SendError: Error, Sendable, CustomStringConvertible {
    /// The network was there and the call failed for another reason (a 4xx, a 5xx, a timeout,
    /// a request the client cannot build): handle it as for any `APIClient` call. Nothing was
    /// stored.
    case network(NetworkError)
    /// A header template may not go to the endpoint's origin, or its variable or credential is
    /// missing. Nothing was sent and nothing stored.
    case template(TemplateError)
    /// The network was gone and the queue could not store the request (a full disk, a queue
    /// opened read-only, a secret header refused). Nothing was stored.
    case queue(QueueError)

    public var description: String {
        switch self {
        case .network(let error): "\(error)"
        case .template(let error): "\(error)"
        case .queue(let error): "\(error)"
        }
    }
}

extension SendError: LocalizedError {
    public var errorDescription: String? { description }
}
