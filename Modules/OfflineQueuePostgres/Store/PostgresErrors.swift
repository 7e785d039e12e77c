import Foundation
import NIOCore
import OfflineQueueCore
import PostgresNIO

/// PostgresNIO's errors in the queue's terms: a server that cannot be reached is
/// ``QueueError/unavailable(location:reason:)``; what the server refused is
/// ``QueueError/io(path:reason:)`` with its message and SQLSTATE. No message carries the
/// password (PostgresNIO's own descriptions never hold it, and `location` is redacted).
enum PostgresErrors {
    static func map(_ error: any Error, location: String) -> QueueError {
        switch error {
        case let error as QueueError:
            return error
        case let error as UnknownStoredValue:
            return error.corruptDatabase(location)
        case let error as PostgresTransactionError:
            // The first failure of the transaction is the one that says why.
            let cause = error.beginError ?? error.closureError ?? error.commitError ?? error.rollbackError
            return cause.map { map($0, location: location) } ?? .io(path: location, reason: "the transaction failed")
        case let error as PSQLError:
            return map(error, location: location)
        case is CancellationError:
            return .io(path: location, reason: "cancelled")
        default:
            // Connecting failed below PostgresNIO (refused, unreachable, a TLS handshake, the
            // pool's circuit breaker): the server cannot be reached.
            return .unavailable(location: location, reason: describe(error))
        }
    }

    private static func map(_ error: PSQLError, location: String) -> QueueError {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "the server refused"
            // 08: connection exceptions; 57P01–57P03: the server shuts down or starts; 53300:
            // too many connections; 28: the login failed.
            if state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300" || state.hasPrefix("28") {
                return .unavailable(location: location, reason: "\(message) (SQLSTATE \(state))")
            }
            if state == "53100" { return .diskFull(path: location) }
            return .io(path: location, reason: "\(message) (SQLSTATE \(state))")
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
             .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest, .authMechanismRequiresPassword,
             .unsupportedAuthMechanism, .saslError:
            let cause = error.underlying.map { ": " + describe($0) } ?? ""
            return .unavailable(location: location, reason: "\(error.code)\(cause)")
        case .queryCancelled:
            return .io(path: location, reason: "the query was cancelled")
        default:
            return .io(path: location, reason: "\(error.code)")
        }
    }

    /// A connection failure in words, without type names where NIO gives a clear message.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return error.description }
        if let error = error as? PSQLError { return "\(error.code)" }
        return String(describing: error)
    }
}
