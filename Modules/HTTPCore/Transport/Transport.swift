public import Foundation
public import HTTPTypes

/// Moves one HTTP exchange over the wire: a request head and optional streamed body in,
/// a response head and streamed body out.
///
/// A transport does one exchange and nothing more: it does not follow redirects, retry,
/// validate status codes or decode; ``APIClient`` does those the same way over every transport.
/// Courier ships ``URLSessionTransport`` and, in its own module, `AsyncHTTPClientTransport`;
/// `StubTransport` (in the `CourierTesting` product) answers from canned responses in tests.
///
/// Conformers throw ``NetworkError`` only: ``NetworkError/transport(_:)`` with the
/// ``TransportFailure/Kind`` that fits, or ``NetworkError/cancelled`` when the calling task was
/// cancelled (which must also cancel the exchange on the wire).
///
/// ```swift
/// struct EchoTransport: Transport {
///     func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
///         TransportResponse(head: HTTPResponse(status: .ok), body: body.map { $0.makeStream() } ?? ByteStream(data: Data()))
///     }
/// }
/// ```
public protocol Transport: Sendable {
    /// Sends `request` with `body` and returns once the response head has arrived.
    ///
    /// - Parameters:
    ///   - request: the request head, its URL absolute.
    ///   - body: the body to send; `nil` for none.
    ///   - timeout: the limit for the whole exchange, head and body; `nil` for none.
    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse

    /// Sends `request` for a caller that will read the whole body into memory and fail past
    /// `maxBytes` (``APIClient``'s data and model calls).
    ///
    /// A hint: a transport may return the response once the body has arrived, in one chunk,
    /// when that saves work; it still returns every byte, and still streams a body longer than
    /// `maxBytes`, which the caller then refuses. By default it is ``send(_:body:timeout:)``.
    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?, collectingUpTo maxBytes: Int) async throws -> TransportResponse

    /// How many requests to `origin` (`scheme://host[:port]`) this transport puts on the wire at
    /// once, when it knows (its HTTP/1.1 connections to one host); those beyond wait inside it
    /// for a connection. A caller that can still change its mind about a request (the offline
    /// queue's drain, which gives back what an origin's pause or open circuit holds) keeps such
    /// requests itself instead. `nil` (the default): no known limit, as over HTTP/2.
    func sendsAtOnce(toOrigin origin: String) -> Int?
}

extension Transport {
    public func sendsAtOnce(toOrigin origin: String) -> Int? { nil }

    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?, collectingUpTo maxBytes: Int) async throws -> TransportResponse {
        try await send(request, body: body, timeout: timeout)
    }
}

/// A response head and its body, still streaming.
public struct TransportResponse: Sendable {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body; consume it once.
    public var body: ByteStream
    /// The request that produced this response, after the redirects the client followed; set
    /// by the client's exchange (`nil` from a transport, or for a response an interceptor made
    /// itself, which then counts as the answer to the request it was given).
    public var request: HTTPRequest?
    /// How many redirects the client followed to get this response.
    public var redirects: Int

    /// A response with `head` and its streaming `body`. A transport leaves `request` `nil` and
    /// `redirects` 0; the client's exchange sets them.
    public init(head: HTTPResponse, body: ByteStream, request: HTTPRequest? = nil, redirects: Int = 0) {
        self.head = head
        self.body = body
        self.request = request
        self.redirects = redirects
    }

    /// The body in memory, up to `maxBytes`, allocated once at the size `Content-Length`
    /// announces (see ``ByteStream/collect(upTo:expectedCount:)``).
    public func collectBody(upTo maxBytes: Int) async throws -> Data {
        // The first field, read in place: the subscript by name joins every value into a new
        // string, for a figure that is only a hint.
        var announced: Int?
        for field in head.headerFields where field.name == .contentLength {
            announced = Int(field.value).flatMap { $0 >= 0 ? $0 : nil }
            break
        }
        return try await body.collect(upTo: maxBytes, expectedCount: announced)
    }
}
