public import Foundation
public import HTTPCore

/// The answer to ``OfflineQueue/send(_:options:)``.
public enum SendOutcome: Sendable {
    /// Sent at once, with the response.
    case sent(Response<Data>)
    /// The network was gone: stored, to be sent when it is back.
    case queued(Ticket)

    /// The ticket, when the request was queued.
    public var ticket: Ticket? {
        if case .queued(let ticket) = self { return ticket }
        return nil
    }
}
