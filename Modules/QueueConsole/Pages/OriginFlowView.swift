import Foundation
import OfflineQueueCore

/// An origin held by flow control, as the overview shows it (``FlowControl``): its circuit when
/// open (``OriginHealth``), paused by a server's `Retry-After` until when, its concurrency
/// shrunk by 429s and 503s, its limit.
struct OriginFlowView: Encodable, Sendable {
    var origin: String
    var pausedUntil: String
    var pauseStatus: String
    var concurrency: String
    var limit: String
    var inflight: Int
    /// The open circuit: since when, the next probe, the failures and the last of them.
    var openSince: String
    var nextProbe: String
    var failures: Int
    var lastError: String
    // Flags for the template.
    var open: Bool
    var hasFailures: Bool
    var paused: Bool
    var shrunk: Bool
    /// Whether there is something to lift (an open circuit, a pause or a shrunk concurrency):
    /// the form shows.
    var canResume: Bool

    init(_ flow: FlowControl.OriginStatus) {
        origin = flow.origin
        pausedUntil = flow.pausedUntil.map(wallTime) ?? ""
        pauseStatus = flow.pauseStatus.map(String.init) ?? ""
        concurrency = flow.concurrency.map(String.init) ?? ""
        limit = flow.limit.map { String($0.text.dropFirst($0.origin.count + 1)) } ?? ""
        inflight = flow.inflight
        openSince = flow.circuit.map { wallTime($0.openedAt) } ?? ""
        nextProbe = flow.circuit.map { wallTime($0.nextProbeAt) } ?? ""
        failures = flow.failures
        lastError = flow.circuit?.lastError ?? ""
        open = flow.circuit != nil
        hasFailures = flow.failures > 0
        paused = flow.pausedUntil != nil
        shrunk = flow.concurrency != nil
        canResume = open || paused || shrunk
    }
}
