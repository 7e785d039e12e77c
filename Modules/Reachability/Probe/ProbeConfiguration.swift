public import Foundation
public import HTTPCore

/// What a ``ProbeMonitor`` asks for, what it expects back, and how often.
///
/// ```swift
/// var probe = ProbeConfiguration(url: URL(string: "http://connectivity.example.com/generate_204")!)
/// probe.interval = .seconds(60)
/// probe.backoff = Backoff(base: .seconds(2), cap: .seconds(60))
/// ```
public struct ProbeConfiguration: Sendable {
    /// The URL to fetch with `GET`.
    public var url: URL
    /// The status a working network answers with; `204` by default.
    public var expectedStatus: Int
    /// The exact body a working network answers with, when it matters (for a `200` probe).
    public var expectedBody: Data?
    /// The limit for one probe, connection and body included.
    public var timeout: Duration
    /// The time between probes while the probe passes.
    public var interval: Duration
    /// The delays between probes while it fails: retry n waits `backoff.delay(forRetry: n)`.
    public var backoff: Backoff
    /// The most body bytes read from a probe answer.
    public var maxBodySize: Int

    /// A probe of `url` expecting `expectedStatus` (and `expectedBody`, when given).
    public init(
        url: URL,
        expectedStatus: Int = 204,
        expectedBody: Data? = nil,
        timeout: Duration = .seconds(5),
        interval: Duration = .seconds(300),
        backoff: Backoff = Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(120)),
        maxBodySize: Int = 64 * 1024
    ) {
        self.url = url
        self.expectedStatus = expectedStatus
        self.expectedBody = expectedBody
        self.timeout = timeout
        self.interval = interval
        self.backoff = backoff
        self.maxBodySize = maxBodySize
    }
}

/// How one probe went.
public enum ProbeOutcome: Sendable, Hashable {
    /// The expected status (and body) came back.
    case passed
    /// Something else answered in the probe server's place.
    case captivePortal(status: Int)
    /// No usable answer: a transport failure, a timeout, or an error status.
    case failed(String)

    /// Judges one answer against `configuration`.
    ///
    /// A redirect, or any 2xx other than the expected one (a login page served with `200` where
    /// `204` is expected), or the expected status with another body, reads as a captive portal.
    public static func judge(status: Int, body: Data, against configuration: ProbeConfiguration) -> ProbeOutcome {
        if status == configuration.expectedStatus {
            guard let expected = configuration.expectedBody, expected != body else { return .passed }
            return .captivePortal(status: status)
        }
        if (200..<400).contains(status) { return .captivePortal(status: status) }
        return .failed("unexpected status \(status)")
    }
}
