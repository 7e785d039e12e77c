public import Foundation
public import HTTPCore

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
