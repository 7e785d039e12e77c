public import HTTPCore

/// A pre-flight check for `APIClient`: fails a call at once with `NetworkError.offline`
/// when the monitor says offline, without touching the network.
///
/// ```swift
/// var configuration = ClientConfiguration(baseURL: api)
/// configuration.plugins.append(ReachabilityPlugin(monitor: netlink))
/// ```
///
/// With `rejectWhenLimited`, a limited network (captive portal, failed probe) is refused too.
public struct ReachabilityPlugin: Plugin {
    /// The monitor asked before each call.
    public let monitor: any NetworkMonitor
    /// Whether a limited status also fails the call.
    public var rejectWhenLimited: Bool
    /// Which endpoints the check applies to; all by default.
    public var scope: PluginScope

    /// A check against `monitor`.
    public init(monitor: any NetworkMonitor, rejectWhenLimited: Bool = false, scope: PluginScope = .universal) {
        self.monitor = monitor
        self.rejectWhenLimited = rejectWhenLimited
        self.scope = scope
    }

    /// Throws `NetworkError.offline` when the monitor says offline (or limited, when
    /// ``rejectWhenLimited``); otherwise passes the request on unchanged.
    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        switch monitor.status {
        case .offline: throw NetworkError.offline
        case .limited where rejectWhenLimited: throw NetworkError.offline
        default: return request
        }
    }
}
