public import Foundation

/// A single-pass asynchronous sequence of byte chunks.
///
/// `ByteStream` is the one currency for streamed bodies in Courier: transports turn their own
/// buffers into `Data` chunks, and request bodies made from files or async sequences are read
/// through it. A stream is consumed once; iterate it, or call `collect(upTo:)`.
///
/// ```swift
/// let stream = ByteStream(data: Data("hello".utf8))
/// for try await chunk in stream { print(chunk.count) }
/// ```
public struct ByteStream: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = any Error

    private let storage: Storage

    /// Where the iterator comes from: a closure that makes one, or a transport's reader, which
    /// is its own iterator (nothing to allocate around it).
    private enum Storage: Sendable {
        case make(@Sendable () -> AsyncIterator)
        case source(any ByteChunkSource)
    }

    private init(makeIterator: @escaping @Sendable () -> AsyncIterator) {
        storage = .make(makeIterator)
    }

    /// A stream whose chunks `source` yields: the cheapest way for a transport to hand over a
    /// body it reads chunk by chunk. A stream made this way is single-pass, as every
    /// `ByteStream` is: iterators made from it share the one source.
    package init(source: any ByteChunkSource) {
        storage = .source(source)
    }

    /// A stream that yields `data` as one chunk (or nothing when it is empty).
    public init(data: Data) {
        self.init(makeIterator: { AsyncIterator(single: data) })
    }

    /// A stream that yields `data` in slices of `chunkSize` bytes (the last one shorter): a
    /// transport then copies one slice at a time into its buffers, never the whole of `data`.
    public init(data: Data, chunkSize: Int) {
        let size = Swift.max(1, chunkSize)
        self.init(makeIterator: {
            var offset = data.startIndex
            return AsyncIterator(next: {
                guard offset < data.endIndex else { return nil }
                let end = data.index(offset, offsetBy: size, limitedBy: data.endIndex) ?? data.endIndex
                defer { offset = end }
                return data[offset..<end]
            })
        })
    }

    /// A stream over any sendable async sequence of `Data` chunks.
    public init<Base: AsyncSequence & Sendable>(_ base: Base) where Base.Element == Data {
        self.init(makeIterator: {
            let box = IteratorBox(base.makeAsyncIterator())
            return AsyncIterator { try await box.next() }
        })
    }

    /// A stream whose chunks come from `next`, which returns `nil` at the end.
    ///
    /// `next` is called serially by one consumer; it is the building block for transports.
    public init(next: @escaping @Sendable () async throws -> Data?) {
        self.init(makeIterator: { AsyncIterator(next: next) })
    }

    /// A stream that reads the file at `url` in chunks of `chunkSize` bytes.
    ///
    /// The file is opened when iteration starts, so the same `ByteStream` value describes the
    /// file's current contents each time it is iterated.
    public init(contentsOf url: URL, chunkSize: Int = 64 * 1024) {
        self.init(makeIterator: { AsyncIterator(source: FileChunkReader(url: url, chunkSize: chunkSize)) })
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch storage {
        case .make(let make): make()
        case .source(let source): AsyncIterator(source: source)
        }
    }

    /// Reads the whole stream into memory, failing with ``NetworkError/bodyTooLarge(limit:)``
    /// as soon as more than `maxBytes` arrive, so a huge or endless body never exhausts memory.
    ///
    /// `expectedCount` is what the sender announced (a response's `Content-Length`): the result
    /// is then allocated once at that size (never above `maxBytes`) and each chunk copied into
    /// it, instead of growing by doubling. It is only a hint: a body that turns out longer or
    /// shorter is still read whole and right.
    public func collect(upTo maxBytes: Int, expectedCount: Int? = nil) async throws -> Data {
        var result = Data()
        var iterator = makeAsyncIterator()
        guard let first = try await iterator.next() else { return result }
        if first.count > maxBytes { throw NetworkError.bodyTooLarge(limit: maxBytes) }
        if let expectedCount, expectedCount > first.count {
            // Reserved only once a first chunk arrived: an empty body allocates nothing.
            result.reserveCapacity(Swift.min(expectedCount, maxBytes))
            result.append(first)
        } else {
            result = first
        }
        while let chunk = try await iterator.next() {
            if result.count + chunk.count > maxBytes { throw NetworkError.bodyTooLarge(limit: maxBytes) }
            result.append(chunk)
        }
        return result
    }

    /// Up to `maxBytes` of the stream, dropping the rest; for error excerpts.
    public func collectPrefix(_ maxBytes: Int) async throws -> Data {
        var result = Data()
        for try await chunk in self {
            let room = maxBytes - result.count
            if room <= 0 { continue }
            result.append(chunk.prefix(room))
        }
        return result
    }

    /// Reads and drops the stream so the connection can be reused; a body longer than
    /// `maxBytes` is abandoned instead (the transport then closes its connection).
    public func discard(upTo maxBytes: Int = .max) async {
        var read = 0
        do {
            for try await chunk in self {
                read += chunk.count
                if read > maxBytes { return }
            }
        } catch {}
    }

    /// Reads the start of the stream, until more than `limit` bytes have arrived or it ends,
    /// without losing the rest: the result's ``BufferedPrefix/stream`` yields the whole body,
    /// the bytes already read first.
    ///
    /// A cache uses it to store bodies that fit; an error handler to read an excerpt while
    /// the caller still gets every byte.
    public func buffered(upTo limit: Int) async throws -> BufferedPrefix {
        let rest = RemainingStream(makeAsyncIterator())
        var bytes = Data()
        while bytes.count <= limit {
            guard let chunk = try await rest.next() else {
                return BufferedPrefix(bytes: bytes, isComplete: true, stream: ByteStream(data: bytes))
            }
            bytes.append(chunk)
        }
        let pending = LockedBox<Data?>(bytes)
        let stream = ByteStream {
            if let head = pending.withLock({ value -> Data? in defer { value = nil }; return value }) { return head }
            return try await rest.next()
        }
        return BufferedPrefix(bytes: bytes, isComplete: false, stream: stream)
    }

    /// The start of a stream and the whole stream again; see ``ByteStream/buffered(upTo:)``.
    public struct BufferedPrefix: Sendable {
        /// The bytes read: the whole body when ``isComplete``, else more than the limit.
        public let bytes: Data
        /// Whether the stream ended within the limit.
        public let isComplete: Bool
        /// The whole body: ``bytes``, then whatever was not read yet.
        public let stream: ByteStream
    }

    /// The iterator of a ``ByteStream``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var single: Data?
        private let nextChunk: (() async throws -> Data?)?
        private let source: (any ByteChunkSource)?

        fileprivate init(single: Data) {
            self.single = single.isEmpty ? nil : single
            self.nextChunk = nil
            self.source = nil
        }

        fileprivate init(next: @escaping () async throws -> Data?) {
            self.single = nil
            self.nextChunk = next
            self.source = nil
        }

        fileprivate init(source: any ByteChunkSource) {
            self.single = nil
            self.nextChunk = nil
            self.source = source
        }

        public mutating func next() async throws -> Data? {
            if let source { return try await source.next() }
            if let nextChunk { return try await nextChunk() }
            defer { single = nil }
            return single
        }
    }
}

/// A body's chunks, read by one consumer at a time (a transport's response body), handed to a
/// ``ByteStream`` with ``ByteStream/init(source:)``: the reader is the iterator, so a stream of
/// it costs no allocation beyond the reader itself.
package protocol ByteChunkSource: AnyObject, Sendable {
    /// The next chunk, or `nil` at the end.
    func next() async throws -> Data?
}

/// The rest of a stream whose start ``ByteStream/buffered(upTo:)`` read.
///
/// `@unchecked Sendable` is sound: a `ByteStream` has one consumer at a time, so `iterator`
/// is advanced first by `buffered(upTo:)` and then, strictly after it returns, by whoever
/// reads the replaying stream; never by two tasks at once.
private final class RemainingStream: @unchecked Sendable {
    private var iterator: ByteStream.AsyncIterator
    init(_ iterator: ByteStream.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> Data? { try await iterator.next() }
}

/// Holds a mutable iterator behind a reference so a closure can advance it.
///
/// Not `Sendable`: it lives inside one `AsyncIterator`, which is consumed by one task at a time.
private final class IteratorBox<Base: AsyncIteratorProtocol> where Base.Element == Data {
    private var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Data? { try await base.next() }
}

/// Reads a file sequentially; opened lazily at the first read, closed at the end or on deinit.
///
/// The open and the reads run off the cooperative pool (``BlockingIO``): a file read blocks its
/// thread, for milliseconds on a cold disk. Each hop reads up to `batch` chunks (about 1 MiB,
/// at most 16), handed out one at a time, so a 10 MiB body costs ten hops, not 160; the
/// chunks are the same sizes as when they were read one per call.
///
/// `@unchecked Sendable` is sound: a `ByteStream` has one consumer at a time, so `next()` never
/// runs twice at once, and a hop's changes (`handle`, `finished`, `failure`) are handed back
/// through its continuation before `next()` reads them.
private final class FileChunkReader: ByteChunkSource, @unchecked Sendable {
    private let url: URL
    private let chunkSize: Int
    private let batch: Int
    private var handle: FileHandle?
    private var finished = false
    /// What a read failed with after the chunks before it were read: thrown once they are out.
    private var failure: (any Error)?
    private var chunks: [Data] = []
    private var taken = 0

    init(url: URL, chunkSize: Int) {
        self.url = url
        self.chunkSize = chunkSize
        batch = Swift.max(1, Swift.min(16, (1 << 20) / Swift.max(1, chunkSize)))
    }

    deinit { try? handle?.close() }

    func next() async throws -> Data? {
        if taken == chunks.count {
            if let failure {
                self.failure = nil
                finished = true
                throw failure
            }
            if finished { return nil }
            chunks = await BlockingIO.run { [self] in readBatch() }
            taken = 0
            if chunks.isEmpty { return try await next() }
        }
        let chunk = chunks[taken]
        // The reader keeps no chunk it handed out.
        chunks[taken] = Data()
        taken += 1
        return chunk
    }

    /// Up to `batch` chunks from where the last read ended. At the end of the file it closes
    /// it and sets `finished`; a failure is kept in `failure`, after the chunks read before it.
    private func readBatch() -> [Data] {
        if handle == nil {
            do { handle = try FileHandle(forReadingFrom: url) } catch {
                failure = NetworkError.invalidRequest(.unreadableFile(url.path, reason: "\(error)"))
                return []
            }
        }
        var read: [Data] = []
        read.reserveCapacity(batch)
        while read.count < batch {
            let chunk: Data?
            do { chunk = try handle?.read(upToCount: chunkSize) } catch {
                failure = error
                break
            }
            guard let chunk, !chunk.isEmpty else {
                finished = true
                try? handle?.close()
                handle = nil
                break
            }
            read.append(chunk)
        }
        return read
    }
}
