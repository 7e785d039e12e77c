import Foundation
public import HTTPCore

extension OriginHealth {
    /// An online call refused because the queue knows its origin's server is unwell: its circuit
    /// is open (``OriginHealth``). Thrown by ``OriginHealth/CircuitGate`` before anything is sent, inside
    /// `HTTPCore.NetworkError/underlying(_:)`; ``OfflineQueue/send(_:options:)`` stores the request
    /// instead when ``OriginHealth/storesWhileOpen`` is set.
    ///
    /// ```swift
    /// do {
    ///     let note = try await client.send(CreateNote(draft))
    /// } catch {
    ///     if case .underlying(let cause) = error, let unwell = cause as? CircuitOpen {
    ///         showBanner("\(unwell.origin) is down; next check \(unwell.circuit.nextProbeAt.formatted())")
    ///     }
    /// }
    /// ```
    public struct CircuitOpen: Error, Sendable, Hashable, CustomStringConvertible {
        /// The origin, as the queue keys it (`https://api.example.com`).
        public var origin: String
        /// The circuit as the queue last read it.
        public var circuit: FlowControl.OriginStatus.Circuit

        public var description: String {
            "\(origin) is unwell (\(circuit.lastError ?? "failing")): its circuit is open since \(circuit.openedAt.formatted(.iso8601)), "
                + "next probe at \(circuit.nextProbeAt.formatted(.iso8601))"
        }
    }
}

/// The queue's view of its origins' circuits, shared by its drains and the online calls that
/// ask for it (``OfflineQueue/circuitGate(scope:)``): what this process's drains opened and closed,
/// at once, and the store's rows (every drainer's, on every host) read again at most once a
/// ``refresh`` while anyone asks. An origin a drain never failed costs a dictionary lookup.
final class OriginCircuits: Sendable {
    /// How stale the view may be before a question reads the store again.
    static let refresh: Duration = .seconds(1)

    private struct View {
        var open: [String: FlowControl.OriginStatus.Circuit] = [:]
        /// When the store was last read (the boot clock's seconds), `nil`: never.
        var readAt: Double?
    }

    private let view = LockedBox(View())
    private let read: @Sendable () async throws(QueueError) -> [FlowControl.OriginStatus]
    private let clock: QueueClock

    init(clock: QueueClock, read: @escaping @Sendable () async throws(QueueError) -> [FlowControl.OriginStatus]) {
        self.clock = clock
        self.read = read
    }

    /// The circuit of `origin` when it is open, as the view holds it; the store is read first
    /// when the view is older than ``refresh`` (by one call; a failed read keeps the view as it
    /// was until the next refresh).
    func open(_ origin: String) async -> FlowControl.OriginStatus.Circuit? {
        let now = clock.now().uptime
        // The call that finds the view stale reads the store; calls meanwhile use the view as it is.
        let stale = view.withLock { view in
            guard view.readAt.map({ now - $0 >= Self.refresh.seconds }) ?? true else { return false }
            view.readAt = now
            return true
        }
        if stale, let flows = try? await read() {
            view.withLock { view in
                view.open = Dictionary(flows.compactMap { flow in flow.circuit.map { (flow.origin, $0) } }, uniquingKeysWith: { first, _ in first })
                view.readAt = now
            }
        }
        return view.withLock { $0.open[origin] }
    }

    /// A drain of this process opened these circuits: calls fail fast from now on, without
    /// waiting for the next read.
    func opened(_ origins: [String], at wall: Date, error: String) {
        guard !origins.isEmpty else { return }
        view.withLock { view in
            for origin in origins where view.open[origin] == nil {
                view.open[origin] = FlowControl.OriginStatus.Circuit(openedAt: wall, nextProbeAt: wall, failures: 0, lastError: error)
            }
        }
    }

    /// These circuits closed (a probe was delivered, or an operator closed them).
    func closed(_ origins: [String]) {
        guard !origins.isEmpty else { return }
        view.withLock { view in for origin in origins { view.open[origin] = nil } }
    }
}

extension OriginHealth {
    /// A plugin for an app's own `APIClient` that fails a call at once, before anything is sent,
    /// while the queue knows the call's origin is unwell (its circuit is open, ``OriginHealth``),
    /// instead of letting it wait out a timeout against a server the queue has already found down.
    /// The error is `HTTPCore.NetworkError/underlying(_:)` holding a ``OriginHealth/CircuitOpen``.
    ///
    /// ```swift
    /// let queue = try OfflineQueue(configuration: configuration, client: client)
    /// var online = client.configuration
    /// online.plugins.append(queue.circuitGate())
    /// let app = APIClient(configuration: online, transport: client.transport)
    /// ```
    ///
    /// Opt-in: a client without it sends as ever. The view is shared with the queue's drains in
    /// the process, and read from the store (every drainer's circuits) at most once a second while
    /// calls ask.
    public struct CircuitGate: Plugin {
        let circuits: OriginCircuits
        public let scope: PluginScope

        public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
            guard let url = request.url?.absoluteString, let origin = FlowOrigin.key(ofURL: url) else { return request }
            if let circuit = await circuits.open(String(origin)) { throw OriginHealth.CircuitOpen(origin: String(origin), circuit: circuit) }
            return request
        }
    }
}

extension OfflineQueue {
    /// A plugin that fails an online call at once while the queue knows its origin is unwell
    /// (``OriginHealth/CircuitGate``), for the endpoints of `scope` (all by default).
    public func circuitGate(scope: PluginScope = .universal) -> OriginHealth.CircuitGate {
        OriginHealth.CircuitGate(circuits: circuits, scope: scope)
    }
}
