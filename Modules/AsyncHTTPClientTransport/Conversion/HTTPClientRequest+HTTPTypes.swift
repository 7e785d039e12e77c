import AsyncHTTPClient
import HTTPCore
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

extension HTTPClientRequest {
    /// The AsyncHTTPClient request for `request` with `body`, streamed; `loops`: the event
    /// loops of the client that writes it (``RequestBodySequence``). `acceptsCompression`: the
    /// client decodes gzip and deflate, so a request without `Accept-Encoding` says so here.
    /// AsyncHTTPClient's decompressor adds the same field otherwise, by rebuilding the head on
    /// the event loop: two allocations more per request.
    #if Brotli
    static let acceptedEncodings = "br, deflate, gzip"
    #else
    static let acceptedEncodings = "deflate, gzip"
    #endif

    init(_ request: HTTPRequest, body: RequestBody?, loops: (any EventLoopGroup)? = nil, acceptsCompression: Bool = false) throws(NetworkError) {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw .invalidRequest(.malformedURL("\(request.scheme ?? "?")://\(request.authority ?? "?")\(request.path ?? "")"))
        }
        self.init(url: "\(scheme)://\(authority)\(request.path ?? "/")")
        method = HTTPMethod(rawValue: request.method.rawValue)
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + (acceptsCompression ? 1 : 0))
        var needsAcceptEncoding = acceptsCompression
        for field in request.headerFields {
            if needsAcceptEncoding, field.name == .acceptEncoding { needsAcceptEncoding = false }
            headers.add(name: field.name.rawName, value: field.value)
        }
        // The value AsyncHTTPClient's decompressor would add, with `br` first when this build
        // decodes it (the package trait `Brotli`).
        if needsAcceptEncoding { headers.add(name: "accept-encoding", value: Self.acceptedEncodings) }
        self.headers = headers
        if let body { self.body = Body(body, loops: loops) }
    }
}

extension HTTPClientRequest.Body {
    /// Bytes in memory go out as one buffer; files and streams are read chunk by chunk, with
    /// `Content-Length` when the length is known and chunked transfer encoding otherwise.
    init(_ body: RequestBody, loops: (any EventLoopGroup)? = nil) {
        switch body.source {
        case .data(let data):
            self = .bytes(ByteBuffer(data: data))
        case .file, .stream:
            let length: Length = body.length.map { .known(Int64($0)) } ?? .unknown
            self = .stream(RequestBodySequence(body.makeStream(), loops: loops), length: length)
        }
    }
}

/// A request body's `Data` chunks as the `ByteBuffer`s AsyncHTTPClient writes.
///
/// Held to the pace of the connection. AsyncHTTPClient hands each chunk to the connection's
/// event loop as a task and asks for the next one at once while the channel is writable; the
/// channel learns it is not only when its loop runs those tasks. A source faster than the loop
/// (a file, a body opened from the queue) so queues chunks without limit: a 1 GiB upload grew
/// the process by up to 157 MiB (AsyncHTTPClient issue #784). So after each `stride` bytes the
/// sequence waits until every loop of `loops` has run what was queued on it before: the chunks
/// given so far have reached the channel, whose writability then holds the producer back. A
/// turn of each loop per MiB costs little, whatever the number of loops.
struct RequestBodySequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let stream: ByteStream
    let loops: (any EventLoopGroup)?
    /// Bytes given between two waits for the loops.
    static let stride = 1 << 20

    init(_ stream: ByteStream, loops: (any EventLoopGroup)? = nil) {
        self.stream = stream
        self.loops = loops
    }

    func makeAsyncIterator() -> Iterator { Iterator(base: stream.makeAsyncIterator(), loops: loops) }

    struct Iterator: AsyncIteratorProtocol {
        var base: ByteStream.AsyncIterator
        let loops: (any EventLoopGroup)?
        var sinceWait = 0

        mutating func next() async throws -> ByteBuffer? {
            if let loops, sinceWait >= RequestBodySequence.stride {
                sinceWait = 0
                for loop in loops.makeIterator() { try await loop.submit {}.get() }
            }
            // Empty chunks are skipped: an empty buffer would end a chunked body early.
            while let chunk = try await base.next() {
                if !chunk.isEmpty {
                    sinceWait += chunk.count
                    return ByteBuffer(data: chunk)
                }
            }
            return nil
        }
    }
}

extension HTTPResponse {
    /// The HTTPTypes head of an AsyncHTTPClient response. Header names that are not valid
    /// tokens (which NIO's parser already refuses) are skipped.
    init(_ response: HTTPClientResponse) {
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count)
        for (name, value) in response.headers {
            guard let fieldName = HTTPField.Name.common(name) ?? HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        // 200 OK, by far the most common, without checking its reason phrase again.
        let status: HTTPResponse.Status = response.status == .ok
            ? .ok
            : HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
        self.init(status: status, headerFields: fields)
    }
}

extension HTTPField.Name {
    /// The names most responses carry, for `name` in any case: found by comparing bytes, where
    /// `init(_:)` checks every byte of the token and lowercases a name such as `Content-Type`.
    /// The field then has the canonical (lowercase) name as its raw name too.
    static func common(_ name: String) -> HTTPField.Name? {
        let candidate: HTTPField.Name
        switch name.utf8.count {
        case 4: candidate = .date
        case 6: candidate = .server
        case 10: candidate = .connection
        case 12: candidate = .contentType
        case 14: candidate = .contentLength
        case 16: candidate = .contentEncoding
        case 17: candidate = .transferEncoding
        default: return nil
        }
        return name.utf8.elementsEqual(candidate.canonicalName.utf8) { $0 == $1 || ($1 >= 0x61 && $0 | 0x20 == $1) } ? candidate : nil
    }
}
