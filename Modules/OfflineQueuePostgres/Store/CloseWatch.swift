import HTTPCore
import PostgresNIO

/// Calls what waits on a connection when the connection closes: one callback on each
/// connection's `closeFuture`, registered when the first wait on it begins and kept until it
/// closes, serves every wait after it (a future's callbacks are never removed, so one per wait
/// would pile up on a connection the pool keeps).
final class CloseWatch: Sendable {
    private struct Watched {
        let connection: PostgresConnection
        var actions: [Int: @Sendable () -> Void] = [:]
    }

    private struct State {
        var next = 0
        var watched: [ObjectIdentifier: Watched] = [:]
    }

    private let state = LockedBox(State())

    /// Calls `action` once `connection` closes (at once if it closed already), unless
    /// ``forget(_:of:)`` is called first with the returned token.
    func onClose(of connection: PostgresConnection, _ action: @escaping @Sendable () -> Void) -> Int {
        let key = ObjectIdentifier(connection)
        let (token, first) = state.withLock { state in
            state.next += 1
            let first = state.watched[key] == nil
            state.watched[key, default: Watched(connection: connection)].actions[state.next] = action
            return (state.next, first)
        }
        if first {
            connection.closeFuture.whenComplete { [state] _ in
                guard let watched = state.withLock({ $0.watched.removeValue(forKey: key) }) else { return }
                for action in watched.actions.values { action() }
            }
        }
        return token
    }

    /// The wait of `token` ended: its action is not called.
    func forget(_ token: Int, of connection: PostgresConnection) {
        state.withLock { _ = $0.watched[ObjectIdentifier(connection)]?.actions.removeValue(forKey: token) }
    }
}
