public import Foundation
public import HTTPTypes

/// A finished exchange: status, header fields, a body of type `Body`, and how it went.
///
/// `Body` is `Data` for data calls, a decoded model for model calls, `URL` for downloads and
/// `Void` for plain calls.
public struct Response<Body> {
    /// The final status, after redirects were followed.
    public var status: HTTPResponse.Status
    /// The response's header fields.
    public var headers: HTTPFields
    /// The body, in the form the call asked for.
    public var body: Body
    /// The request that produced this response (the last hop when redirects were followed).
    public var request: HTTPRequest
    /// Timing and counts for the whole call.
    public var metrics: ResponseMetrics

    /// A response made of its parts, as interceptors and tests build one; `metrics` default to
    /// one attempt with nothing measured.
    public init(status: HTTPResponse.Status, headers: HTTPFields, body: Body, request: HTTPRequest, metrics: ResponseMetrics = ResponseMetrics()) {
        self.status = status
        self.headers = headers
        self.body = body
        self.request = request
        self.metrics = metrics
    }

    /// The URL of ``request``.
    public var url: URL? { request.url }

    /// The same response with another body.
    public func map<New>(_ transform: (Body) throws -> New) rethrows -> Response<New> {
        Response<New>(status: status, headers: headers, body: try transform(body), request: request, metrics: metrics)
    }
}

extension Response: Sendable where Body: Sendable {}

extension Response: CustomStringConvertible {
    public var description: String {
        "\(status.code) \(request.method.rawValue) \(url?.absoluteString ?? request.path ?? "")"
    }
}

/// How a call went: time taken, attempts, redirects and bytes received.
public struct ResponseMetrics: Sendable, Hashable {
    /// Wall time from the first byte sent to the end of the body (or the error).
    public var duration: Duration
    /// How many times the request was sent (retries included).
    public var attempts: Int
    /// How many redirects were followed on the last attempt.
    public var redirects: Int
    /// Body bytes received on the last attempt.
    public var bytesReceived: Int

    /// Metrics with these values; the defaults describe one attempt that took no time, followed
    /// no redirect and received no bytes.
    public init(duration: Duration = .zero, attempts: Int = 1, redirects: Int = 0, bytesReceived: Int = 0) {
        self.duration = duration
        self.attempts = attempts
        self.redirects = redirects
        self.bytesReceived = bytesReceived
    }
}
