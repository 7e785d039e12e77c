public import Foundation

/// The first `count` ``TestPayload`` bytes as an async sequence of `Data` chunks, made as they
/// are read: a streamed request body of any size that costs one chunk of memory.
///
/// ```swift
/// let body = RequestContent.stream(length: 10 << 20) { ByteStream(PayloadChunks(count: 10 << 20)) }
/// ```
public struct PayloadChunks: AsyncSequence, Sendable {
    public typealias Element = Data
    /// How many bytes in all.
    public let count: Int
    /// The size of each chunk but the last.
    public let chunkSize: Int

    /// `count` bytes in chunks of `chunkSize`.
    public init(count: Int, chunkSize: Int = 64 * 1024) {
        self.count = count
        self.chunkSize = chunkSize
    }

    public func makeAsyncIterator() -> Iterator { Iterator(count: count, chunkSize: chunkSize) }

    /// Yields the next chunk until `count` bytes were yielded.
    public struct Iterator: AsyncIteratorProtocol {
        let count: Int
        let chunkSize: Int
        var offset = 0

        public mutating func next() async -> Data? {
            guard offset < count else { return nil }
            let length = Swift.min(chunkSize, count - offset)
            defer { offset += length }
            return Data(TestPayload.bytes(offset: offset, count: length))
        }
    }
}
