/// A source of ``NetworkStatus``: the status now, and a stream of changes.
///
/// Conformers never emit the same status twice in a row, and end their streams when they stop.
///
/// ```swift
/// let monitor = try NetlinkMonitor()
/// print(monitor.status)
/// for await status in monitor.statusUpdates() {
///     if status.isOnline { _ = try await queue.drain() }     // drain returns a DrainSummary
/// }
/// ```
public protocol NetworkMonitor: AnyObject, Sendable {
    /// The status right now.
    var status: NetworkStatus { get }

    /// A stream that yields the current status at once, then every change, and finishes when
    /// the monitor stops. Each call returns a new, independent stream.
    func statusUpdates() -> AsyncStream<NetworkStatus>
}

extension NetworkMonitor {
    /// Waits until `predicate` holds for the status, and returns that status; returns `nil` when
    /// the monitor stops first or the task is cancelled.
    ///
    /// The predicate is `@Sendable` because the wait runs off the caller's actor: so it can be
    /// called from the main actor (top-level code, a UI) with `\.isOnline` or a closure.
    public func firstStatus(where predicate: @Sendable (NetworkStatus) -> Bool) async -> NetworkStatus? {
        for await status in statusUpdates() where predicate(status) { return status }
        return nil
    }
}
