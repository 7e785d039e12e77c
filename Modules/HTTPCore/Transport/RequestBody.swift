public import Foundation

/// The body of an outgoing request: bytes in memory, a file streamed from disk, or a stream.
///
/// Every kind can be sent more than once, so retries and 307/308 redirects replay the body:
/// a file is reopened, and a stream body is created anew by its factory.
public struct RequestBody: Sendable {
    /// Where the bytes come from.
    public enum Source: Sendable {
        /// Bytes in memory.
        case data(Data)
        /// A file on disk, opened anew for every send.
        case file(URL)
        /// A factory called for a fresh stream for every send.
        case stream(@Sendable () -> ByteStream)
    }

    /// Where the bytes come from.
    public let source: Source
    /// The body's length in bytes when known; `nil` sends the body chunked.
    public let length: Int?

    /// A body from bytes in memory.
    public static func data(_ data: Data) -> RequestBody {
        RequestBody(source: .data(data), length: data.count)
    }

    /// A body streamed from the file at `url`.
    ///
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when the file is missing, not a regular
    ///   file or unreadable, before any byte is sent.
    public static func file(_ url: URL) throws(NetworkError) -> RequestBody {
        let path = url.path
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .invalidRequest(.unreadableFile(path, reason: "missing or not readable"))
        }
        let attributes: [FileAttributeKey: Any]
        do { attributes = try FileManager.default.attributesOfItem(atPath: path) } catch {
            throw .invalidRequest(.unreadableFile(path, reason: "\(error)"))
        }
        guard (attributes[.type] as? FileAttributeType) == .typeRegular,
              let size = (attributes[.size] as? NSNumber)?.intValue else {
            throw .invalidRequest(.unreadableFile(path, reason: "not a regular file"))
        }
        return RequestBody(source: .file(url), length: size)
    }

    /// A body produced by `makeStream`, which is called once per attempt.
    ///
    /// - Parameters:
    ///   - length: the exact byte count when known (sent as `Content-Length`); `nil` sends the
    ///     body with chunked transfer encoding.
    ///   - makeStream: makes the body's bytes afresh; called once per attempt.
    public static func stream(length: Int?, _ makeStream: @escaping @Sendable () -> ByteStream) -> RequestBody {
        RequestBody(source: .stream(makeStream), length: length)
    }

    /// The body as a fresh stream of chunks, for transports that stream.
    public func makeStream(chunkSize: Int = 64 * 1024) -> ByteStream {
        switch source {
        case .data(let data): ByteStream(data: data)
        case .file(let url): ByteStream(contentsOf: url, chunkSize: chunkSize)
        case .stream(let make): make()
        }
    }

    /// The whole body in memory, refusing bodies larger than `maxBytes`.
    public func collect(upTo maxBytes: Int) async throws -> Data {
        if case .data(let data) = source {
            guard data.count <= maxBytes else { throw NetworkError.bodyTooLarge(limit: maxBytes) }
            return data
        }
        return try await makeStream().collect(upTo: maxBytes)
    }
}
