import AsyncHTTPClient
import HTTPCore
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

extension HTTPClientRequest {
    /// The AsyncHTTPClient request for `request` with `body`, streamed.
    init(_ request: HTTPRequest, body: RequestBody?) throws(NetworkError) {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw .invalidRequest(.malformedURL("\(request.scheme ?? "?")://\(request.authority ?? "?")\(request.path ?? "")"))
        }
        self.init(url: "\(scheme)://\(authority)\(request.path ?? "/")")
        method = HTTPMethod(rawValue: request.method.rawValue)
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            headers.add(name: field.name.rawName, value: field.value)
        }
        self.headers = headers
        if let body { self.body = Body(body) }
    }
}

extension HTTPClientRequest.Body {
    /// Bytes in memory go out as one buffer; files and streams are read chunk by chunk, with
    /// `Content-Length` when the length is known and chunked transfer encoding otherwise.
    init(_ body: RequestBody) {
        switch body.source {
        case .data(let data):
            self = .bytes(ByteBuffer(data: data))
        case .file, .stream:
            let length: Length = body.length.map { .known(Int64($0)) } ?? .unknown
            self = .stream(RequestBodySequence(body.makeStream()), length: length)
        }
    }
}

/// A request body's `Data` chunks as the `ByteBuffer`s AsyncHTTPClient writes.
struct RequestBodySequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let stream: ByteStream

    init(_ stream: ByteStream) { self.stream = stream }

    func makeAsyncIterator() -> Iterator { Iterator(base: stream.makeAsyncIterator()) }

    struct Iterator: AsyncIteratorProtocol {
        var base: ByteStream.AsyncIterator

        mutating func next() async throws -> ByteBuffer? {
            // Empty chunks are skipped: an empty buffer would end a chunked body early.
            while let chunk = try await base.next() {
                if !chunk.isEmpty { return ByteBuffer(data: chunk) }
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
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        // 200 OK, by far the most common, without checking its reason phrase again.
        let status: HTTPResponse.Status = response.status == .ok
            ? .ok
            : HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
        self.init(status: status, headerFields: fields)
    }
}
