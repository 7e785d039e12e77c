#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif
public import HTTPTypes

/// A ``Transport`` over Foundation's `URLSession` (FoundationNetworking, built on libcurl, on
/// Linux), with no third-party dependency.
///
/// It does one exchange and nothing more, like every transport: 3xx responses come back as
/// they are (``APIClient`` follows redirects), cookies and caches are left out of the default
/// configuration, and errors are ``NetworkError`` values.
///
/// ```swift
/// let client = APIClient(baseURL: URL(string: "https://api.example.com")!, transport: URLSessionTransport())
/// ```
///
/// How bodies move:
/// - Calls that read the whole body into memory (``send(_:body:timeout:collectingUpTo:)``) get
///   it in one chunk once it has arrived; see that method for how, and for
///   ``streamsCollectedBodies``.
/// - Response bodies stream: each chunk URLSession hands the delegate becomes a chunk of the
///   ``ByteStream``. libcurl cannot be paused from FoundationNetworking, so there is no
///   backpressure; instead at most ``maxBufferedBytes`` may wait for a slow reader, and past that
///   the exchange is cancelled with ``NetworkError/bodyTooLarge(limit:)`` rather than growing
///   without bound. A reader that keeps up never sees the limit.
/// - gzip and deflate responses are decoded by URLSession; the body holds the decoded bytes,
///   so `Content-Encoding` and `Content-Length` (which describe the encoded bytes) are removed
///   from the response head.
/// - Request bodies: `.data` goes as `httpBody`; `.file` is uploaded from the file, streamed by
///   URLSession; `.stream` is read whole first: up to 1 MiB into memory and sent as `httpBody`,
///   anything larger into a temporary file (mode 0600, removed when the exchange ends) that is
///   then uploaded from disk, so memory stays bounded whatever the size. The body is therefore
///   sent with `Content-Length`, never chunked.
///   FoundationNetworking offers no working way to feed a task from an async source
///   (`Stream.getBoundStreams` traps as unsupported there, and a body stream is read on the
///   session's own queue, which must not block).
/// - The timeout covers the whole exchange, spooling, head and body, with sub-second precision
///   (FoundationNetworking itself truncates timeouts to whole seconds).
///
/// What differs from `AsyncHTTPClientTransport` on Linux, because of
/// FoundationNetworking:
/// - Repeated response fields arrive as one field whose value joins them with ", " (as RFC 9110
///   allows for list fields; `Set-Cookie` suffers), and field order is lost.
/// - Repeated request fields are sent as one line joined with ", " (`Cookie` with "; ").
/// - When absent, FoundationNetworking adds `User-Agent` (process name and curl version),
///   `Accept-Language`, and, on a POST with a body, `Content-Type: application/x-www-form-urlencoded`.
/// - The body of a 3xx is buffered by URLSession and delivered at the end, not streamed; a 3xx
///   without `Location` comes back with its head but an empty body.
/// - There are no server-trust challenges on Linux, so only the system's CA store
///   (`/etc/ssl/certs/ca-certificates.crt`) is trusted; a private CA needs another transport.
public final class URLSessionTransport: Transport {
    /// The most body bytes that may wait in memory for a reader that lags behind the network.
    public let maxBufferedBytes: Int
    /// Whether calls that read the whole body into memory (``APIClient``'s data and model
    /// calls) stream it through the delegate too, so that a body over their limit is refused
    /// as soon as the limit is passed, at the cost of URLSession's delegate hops. `true` unless
    /// changed: with `false`, safe requests go as completion-handler tasks (see
    /// ``send(_:body:timeout:collectingUpTo:)``), which is faster but holds a body of any size
    /// in memory until it has arrived whole, so a hostile or broken server can make the process
    /// buffer what it sends until the timeout. Turn it off only for servers you trust.
    public let streamsCollectedBodies: Bool

    private let session: URLSession
    private let delegate: URLSessionTransportDelegate
    /// Every exchange's deadline, on one timer.
    private let deadlines = URLSessionDeadlines()

    /// A transport with ``defaultConfiguration()`` and a 32 MiB read-ahead limit.
    public convenience init() {
        self.init(configuration: Self.defaultConfiguration())
    }

    /// A transport over a session with `configuration`.
    ///
    /// The transport installs its own delegate (to stream bodies and to refuse redirects) and a
    /// serial delegate queue. Cookie storage and the URL cache, when `configuration` has them,
    /// stay in effect: pass ``defaultConfiguration()`` or an ephemeral configuration without
    /// them to leave cookies and caching to the client's plugins.
    ///
    /// - Parameters:
    ///   - configuration: the session's configuration.
    ///   - maxBufferedBytes: how many response-body bytes may wait for a slow reader.
    ///   - streamsCollectedBodies: see ``streamsCollectedBodies``.
    public init(configuration: URLSessionConfiguration, maxBufferedBytes: Int = 32 * 1024 * 1024, streamsCollectedBodies: Bool = true) {
        self.maxBufferedBytes = maxBufferedBytes
        self.streamsCollectedBodies = streamsCollectedBodies
        let queue = OperationQueue()
        queue.name = "courier.URLSessionTransport"
        // Serial, so chunks reach the exchange in the order libcurl produced them.
        queue.maxConcurrentOperationCount = 1
        let delegate = URLSessionTransportDelegate()
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// An ephemeral configuration without cookies or caching, 16 connections per host, and no
    /// session-level timeout (each exchange has its own).
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        // FoundationNetworking answers a 401 with WWW-Authenticate through the credential
        // storage; without one the 401 simply comes back, which is what the client expects.
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpMaximumConnectionsPerHost = 16
        // One week: FoundationNetworking multiplies by 1000 into an Int, so no infinity here.
        configuration.timeoutIntervalForRequest = 7 * 24 * 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        return configuration
    }

    /// Sends `request` and returns when its head has arrived; the body streams after that.
    ///
    /// - Throws: ``NetworkError/transport(_:)`` with the kind that fits (the table is in
    ///   `URLSessionTransport+Errors.swift`), ``NetworkError/cancelled`` when the calling task is
    ///   cancelled (the `URLSessionTask` is cancelled too), or what a stream body threw.
    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        try await send(request, body: body, timeout: timeout, exchange: URLSessionExchange(maxBufferedBytes: maxBufferedBytes))
    }

    /// Sends `request` for a caller that reads the whole body into memory: the response comes
    /// back once its body has arrived, as one chunk, which saves the caller a wake-up per chunk
    /// and one for the end of the body. A body longer than `maxBytes` (or half of
    /// ``maxBufferedBytes``) is not held: its head comes back when that many bytes have arrived
    /// and the rest streams, as ``send(_:body:timeout:)`` does, so memory stays bounded and the
    /// caller's own limit applies as before.
    ///
    /// When ``streamsCollectedBodies`` is off, a safe request (`GET`, `HEAD`, `OPTIONS`) with
    /// no body or one in memory goes as a task with a completion handler, as
    /// `URLSession.data(for:)` does: URLSession then calls into Courier once, at the end,
    /// instead of three times (head, body, end), each a hop through the delegate queue and most
    /// a thread wake-up. Redirects are still refused by the delegate, and cancellation and the
    /// timeout cancel the task as for any exchange. Two differences:
    /// - URLSession shows such a task's body only at the end, so a body over `maxBytes` is
    ///   refused once it has arrived whole (the timeout still bounds how long that can take)
    ///   rather than as soon as the limit is passed;
    /// - a 401 whose `WWW-Authenticate` FoundationNetworking turns into a challenge (Basic, for
    ///   one) cannot be answered for such a task without losing its body (the delegate refuses
    ///   challenges, which cancels the task), so the request is then sent once more, streamed,
    ///   which returns the 401 with its body: a second request, which a safe method allows.
    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?, collectingUpTo maxBytes: Int) async throws -> TransportResponse {
        if !streamsCollectedBodies, Self.completesWhole(request, body: body) {
            let whole = URLSessionExchange(maxBufferedBytes: maxBufferedBytes, holdingHeadUpTo: maxBytes, completionHandler: true)
            do {
                return try await send(request, body: body, timeout: timeout, exchange: whole)
            } catch NetworkError.cancelled where whole.wasChallenged && !Task.isCancelled {
                // Sent again below, streamed: the delegate then completes the 401 with its body.
            }
        }
        return try await send(
            request, body: body, timeout: timeout,
            exchange: URLSessionExchange(maxBufferedBytes: maxBufferedBytes, holdingHeadUpTo: maxBytes)
        )
    }

    /// Whether a collected call can go as a completion-handler task: a safe method (which may
    /// be sent twice) with no body or one in memory.
    static func completesWhole(_ request: HTTPRequest, body: RequestBody?) -> Bool {
        guard request.method == .get || request.method == .head || request.method == .options else { return false }
        switch body?.source {
        case nil, .data: return true
        case .file, .stream: return false
        }
    }

    private func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?, exchange: URLSessionExchange) async throws -> TransportResponse {
        if Task.isCancelled { throw NetworkError.cancelled }
        if let failure = SpecialUseDomain.failure(for: request) { throw failure }
        let deadline = timeout.map { ContinuousClock.now.advanced(by: $0) }
        var urlRequest = try Self.urlRequest(for: request, timeout: timeout)
        let task: URLSessionTask
        if exchange.completionHandler {
            if case .data(let data) = body?.source { urlRequest.httpBody = data }
            task = session.dataTask(with: urlRequest) { data, response, error in
                exchange.completeWhole(data: data, response: response, error: error)
            }
        } else {
            switch body?.source {
            case nil:
                task = session.dataTask(with: urlRequest)
            case .data(let data):
                urlRequest.httpBody = data
                task = session.dataTask(with: urlRequest)
            case .file(let url):
                task = session.uploadTask(with: urlRequest, fromFile: url)
            case .stream(let makeStream):
                switch try await Self.spool(makeStream(), deadline: deadline) {
                case .data(let data):
                    urlRequest.httpBody = data
                    task = session.dataTask(with: urlRequest)
                case .file(let spooled):
                    exchange.onEnd { try? FileManager.default.removeItem(at: spooled) }
                    task = session.uploadTask(with: urlRequest, fromFile: spooled)
                }
            }
        }
        exchange.start(task, deadline: deadline, on: deadlines, registeredWith: delegate)
        let head = try await withTaskCancellationHandler {
            try await exchange.head()
        } onCancel: {
            exchange.fail(.cancelled)
        }
        if let whole = exchange.takeWholeBody() {
            return TransportResponse(head: head, body: ByteStream(data: whole))
        }
        let reader = BodyReader(exchange: exchange, transport: self)
        return TransportResponse(head: head, body: ByteStream { try await reader.next() })
    }

    /// The `URLRequest` for `request`: header fields with one name are joined into one line
    /// (`URLRequest` holds one value per name), and framing fields are left to URLSession.
    static func urlRequest(for request: HTTPRequest, timeout: Duration?) throws(NetworkError) -> URLRequest {
        guard let url = request.url else {
            throw .invalidRequest(.malformedURL("\(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "")"))
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.httpShouldHandleCookies = false
        if let timeout {
            // A backstop only; the exchange's own timer fires first and more precisely.
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            urlRequest.timeoutInterval = max(1, seconds.rounded(.up) + 1)
        }
        var lines: [(name: HTTPField.Name, values: [String])] = []
        for field in request.headerFields {
            if field.name == .contentLength || field.name == .transferEncoding { continue }
            // `HTTPField.Name` compares by its canonical (lowercased) name.
            if let index = lines.firstIndex(where: { $0.name == field.name }) {
                lines[index].values.append(field.value)
            } else {
                lines.append((field.name, [field.value]))
            }
        }
        for line in lines {
            let value = line.values.count == 1 ? line.values[0] : line.values.joined(separator: line.name == .cookie ? "; " : ", ")
            urlRequest.setValue(value, forHTTPHeaderField: line.name.rawName)
        }
        return urlRequest
    }

    /// The response head for `response`, without the fields that describe an encoding URLSession
    /// already removed. Field order follows the name, since URLSession keeps fields in a
    /// dictionary; repeated fields arrive joined into one comma-separated line.
    static func responseHead(_ response: URLResponse?) -> HTTPResponse? {
        guard let response = response as? HTTPURLResponse else { return nil }
        var pairs: [(name: HTTPField.Name, value: String)] = []
        for (key, value) in response.allHeaderFields {
            guard let key = key as? String, let value = value as? String, let name = HTTPField.Name(key) else { continue }
            pairs.append((name, value))
        }
        let encoding = pairs.first { $0.name == .contentEncoding }?.value.lowercased()
        if let encoding, encoding != "identity" {
            pairs.removeAll { $0.name == .contentEncoding || $0.name == .contentLength }
        }
        pairs.sort { $0.name.canonicalName < $1.name.canonicalName }
        var fields = HTTPFields()
        for pair in pairs { fields.append(HTTPField(name: pair.name, value: pair.value)) }
        return HTTPResponse(status: HTTPResponse.Status(code: response.statusCode), headerFields: fields)
    }
}

extension URLSessionTransport {
    /// A stream body made ready for URLSession: small bodies in memory, larger ones in a file.
    enum SpooledBody {
        case data(Data)
        case file(URL)
    }

    /// Bodies up to this size stay in memory; larger ones go to a spool file.
    static let inMemorySpoolLimit = 1024 * 1024

    /// Reads `stream` whole: into memory while it stays within ``inMemorySpoolLimit``, then into
    /// a new temporary file readable only by this user (which the caller removes).
    ///
    /// - Throws: ``NetworkError/cancelled`` when the task is cancelled, a `timedOut` transport
    ///   failure past `deadline`, ``NetworkError/invalidRequest(_:)`` when the file cannot be
    ///   written, or what the stream throws.
    static func spool(_ stream: ByteStream, deadline: ContinuousClock.Instant?) async throws -> SpooledBody {
        var memory = Data()
        var file: (url: URL, handle: FileHandle)?
        do {
            for try await chunk in stream {
                if Task.isCancelled { throw NetworkError.cancelled }
                if let deadline, ContinuousClock.now >= deadline {
                    throw NetworkError.transport(TransportFailure(.timedOut, "timed out while reading the request body stream"))
                }
                if file == nil, memory.count + chunk.count <= inMemorySpoolLimit {
                    memory.append(chunk)
                    continue
                }
                if file == nil {
                    file = try makeSpoolFile()
                    try file?.handle.write(contentsOf: memory)
                    memory = Data()
                }
                try file?.handle.write(contentsOf: chunk)
            }
            guard let file else { return .data(memory) }
            try file.handle.close()
            return .file(file.url)
        } catch {
            if let file {
                try? file.handle.close()
                try? FileManager.default.removeItem(at: file.url)
            }
            throw NetworkError(error)
        }
    }

    private static func makeSpoolFile() throws -> (url: URL, handle: FileHandle) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID().uuidString).body")
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = try? FileHandle(forWritingTo: url) else {
            throw NetworkError.invalidRequest(.unreadableFile(url.path, reason: "cannot create a spool file for the stream body"))
        }
        return (url, handle)
    }
}

/// Reads one exchange's body for a ``ByteStream``.
///
/// When the stream is dropped before its end, the reader goes with it and cancels the
/// exchange, so an abandoned body never keeps a connection busy. It holds the transport so the
/// session outlives every body still being read.
private final class BodyReader: Sendable {
    private let exchange: URLSessionExchange
    private let transport: URLSessionTransport

    init(exchange: URLSessionExchange, transport: URLSessionTransport) {
        self.exchange = exchange
        self.transport = transport
    }

    deinit {
        exchange.fail(.cancelled)
    }

    func next() async throws -> Data? {
        // A cancelled reader stops even when the rest of the body is already buffered.
        if Task.isCancelled {
            exchange.fail(.cancelled)
            throw NetworkError.cancelled
        }
        return try await withTaskCancellationHandler {
            try await exchange.nextChunk()
        } onCancel: {
            exchange.fail(.cancelled)
        }
    }
}
