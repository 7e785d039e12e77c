import HTTPCore

/// Several monitors read as one: online only when every one of them is online.
///
/// The combined status is the first member's offline status if any member is offline, else the
/// first member's limited status if any is limited, else the first member's online status (so
/// put the monitor that knows the interface, usually a ``NetlinkMonitor``, first).
///
/// ```swift
/// let monitor = CombinedMonitor.all(of: [netlink, probe])   // route exists AND probe passes
/// ```
public final class CombinedMonitor: NetworkMonitor {
    /// The monitors combined, in order.
    public let members: [any NetworkMonitor]
    private let broadcast: StatusBroadcast
    private let watchers = LockedBox<[Task<Void, Never>]>([])

    /// Combines `members`; it follows their changes until ``stop()``.
    public init(_ members: [any NetworkMonitor]) {
        self.members = members
        broadcast = StatusBroadcast(Self.combine(members.map(\.status)))
        let tasks = members.map { member in
            Task { [weak self] in
                for await _ in member.statusUpdates() {
                    guard let self else { return }
                    broadcast.publish(Self.combine(self.members.map(\.status)))
                }
            }
        }
        watchers.withLock { $0 = tasks }
    }

    /// The monitor that is online when all of `monitors` are.
    public static func all(of monitors: [any NetworkMonitor]) -> CombinedMonitor {
        CombinedMonitor(monitors)
    }

    deinit { stop() }

    /// The status now.
    public var status: NetworkStatus { broadcast.status }

    /// The current status at once, then every change, until ``stop()``.
    public func statusUpdates() -> AsyncStream<NetworkStatus> { broadcast.stream() }

    /// Stops following the members (it does not stop them) and ends every stream.
    public func stop() {
        for task in watchers.withLock({ $0 }) { task.cancel() }
        broadcast.finish()
    }

    /// The rule: any offline wins, then any limited, then the first online.
    static func combine(_ statuses: [NetworkStatus]) -> NetworkStatus {
        if let offline = statuses.first(where: \.isOffline) { return offline }
        if let limited = statuses.first(where: { if case .limited = $0 { true } else { false } }) { return limited }
        return statuses.first ?? .offline(.noLink)
    }
}
