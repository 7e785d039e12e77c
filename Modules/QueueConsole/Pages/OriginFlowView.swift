import Foundation
import OfflineQueueCore

/// An origin held by flow control, as the overview shows it (``FlowControl``): paused by a
/// server's `Retry-After` until when, its concurrency shrunk by 429s and 503s, its limit.
struct OriginFlowView: Encodable, Sendable {
    var origin: String
    var pausedUntil: String
    var pauseStatus: String
    var concurrency: String
    var limit: String
    var inflight: Int
    // Flags for the template.
    var paused: Bool
    var shrunk: Bool
    /// Whether there is something to lift (a pause or a shrunk concurrency): the form shows.
    var canResume: Bool

    init(_ flow: OriginFlowStatus) {
        origin = flow.origin
        pausedUntil = flow.pausedUntil.map(wallTime) ?? ""
        pauseStatus = flow.pauseStatus.map(String.init) ?? ""
        concurrency = flow.concurrency.map(String.init) ?? ""
        limit = flow.limit.map { String($0.text.dropFirst($0.origin.count + 1)) } ?? ""
        inflight = flow.inflight
        paused = flow.pausedUntil != nil
        shrunk = flow.concurrency != nil
        canResume = paused || shrunk
    }
}
