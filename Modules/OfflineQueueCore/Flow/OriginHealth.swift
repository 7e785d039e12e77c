import HTTPCore

/// When the queue takes an origin's server for unwell, and how it finds out that it is back
/// (``FlowControl/health``): a circuit per origin, held for every drainer of the queue, in every
/// process and on every host, as flow control is.
///
/// - **Opens** after ``openAfter`` answers in a row that say the server is unwell, not the
///   request, with no delivery between: 5xx other than 501 and 505, a reset, a refused
///   connection, a timeout, a TLS handshake that failed for a reason other than the certificate.
/// - **While open**, no drainer claims the origin's entries: they spend no attempt and wait no
///   backoff of their own; other origins flow.
/// - **Probes**: one request at a time for the whole queue, the origin's next due entry (its
///   real delivery), first ``probeInterval`` after the circuit opened, then twice as long after
///   each probe that failed, up to ``maxProbeInterval``.
/// - **Closes** when a probe is delivered: every entry of the origin is due at once, within its
///   limits and concurrency. An operator closes it too (`sync resume --origin`,
///   ``OfflineQueue/resume(origin:)``).
///
/// ```swift
/// var configuration = QueueConfiguration(path: path)
/// configuration.flow.health = OriginHealth(openAfter: 10, maxProbeInterval: .seconds(300))
/// configuration.flow.health = .never      // no circuits: every entry keeps its own backoff
/// ```
public struct OriginHealth: Sendable, Hashable {
    /// Failures in a row that open the circuit: 5 unless set; 0 never opens one.
    public var openAfter: Int
    /// The wait before the first probe: 1 s unless set.
    public var probeInterval: Duration
    /// The longest wait between probes: 60 s unless set.
    public var maxProbeInterval: Duration
    /// Whether ``OfflineQueue/send(_:options:)`` stores a request to an origin whose circuit is
    /// open without trying it (as when the network is gone), rather than sending it: `false`
    /// unless set. For an app's own calls, see ``OfflineQueue/circuitGate(scope:)``.
    public var storesWhileOpen: Bool

    /// Circuits that open after `openAfter` failures in a row (below 0: 0), probed after
    /// `probeInterval`, then after twice as long each time, up to `maxProbeInterval` (at least
    /// `probeInterval`), each wait moved by up to a fifth either way at random.
    public init(openAfter: Int = 5, probeInterval: Duration = .seconds(1), maxProbeInterval: Duration = .seconds(60), storesWhileOpen: Bool = false) {
        self.storesWhileOpen = storesWhileOpen
        self.openAfter = max(0, openAfter)
        self.probeInterval = max(.milliseconds(1), probeInterval)
        self.maxProbeInterval = max(self.probeInterval, maxProbeInterval)
    }

    /// No circuit ever opens.
    public static let never = OriginHealth(openAfter: 0)

    /// Whether an answer with `status` says the server is unwell: 5xx but 501 (a method it does
    /// not know) and 505 (an HTTP version it does not speak), which say it of the request.
    public static func isUnwell(status: Int) -> Bool {
        (500...599).contains(status) && status != 501 && status != 505
    }
}
