import Foundation
import HTTPCore

/// The bytes of a ``MultipartForm``, produced part by part in chunks of about `chunkSize`
/// bytes, so memory stays constant whatever the size of the files.
struct MultipartByteSequence: AsyncSequence, Sendable {
    typealias Element = Data

    let form: MultipartForm
    let chunkSize: Int
    let progress: (@Sendable (UploadProgress) -> Void)?

    func makeAsyncIterator() -> Iterator {
        Iterator(form: form, chunkSize: chunkSize, progress: progress)
    }

    /// Walks the parts: header, content, line break; then the closing delimiter.
    struct Iterator: AsyncIteratorProtocol {
        private enum Stage {
            case header(Int)
            case content(Int, ContentReader)
            case trailer(Int)
            case closing
            case done
        }

        private let form: MultipartForm
        private let chunkSize: Int
        private let progress: (@Sendable (UploadProgress) -> Void)?
        private let total: Int?
        private var stage: Stage
        private var sent = 0

        init(form: MultipartForm, chunkSize: Int, progress: (@Sendable (UploadProgress) -> Void)?) {
            self.form = form
            self.chunkSize = chunkSize
            self.progress = progress
            self.total = form.contentLength
            self.stage = form.parts.isEmpty ? .closing : .header(0)
        }

        mutating func next() async throws -> Data? {
            var chunk = Data()
            chunk.reserveCapacity(chunkSize)
            while chunk.count < chunkSize {
                switch stage {
                case .header(let index):
                    let part = form.parts[index]
                    chunk.append(form.header(for: part))
                    stage = .content(index, try await ContentReader.open(part))
                case .content(let index, let reader):
                    if let bytes = try await reader.read(upTo: chunkSize - chunk.count) {
                        chunk.append(bytes)
                    } else {
                        stage = .trailer(index)
                    }
                case .trailer(let index):
                    chunk.append(contentsOf: [0x0D, 0x0A])
                    stage = index + 1 < form.parts.count ? .header(index + 1) : .closing
                case .closing:
                    chunk.append(form.closingDelimiter)
                    stage = .done
                case .done:
                    return finish(chunk)
                }
            }
            return finish(chunk)
        }

        private mutating func finish(_ chunk: Data) -> Data? {
            guard !chunk.isEmpty else { return nil }
            sent += chunk.count
            progress?(UploadProgress(bytesSent: sent, totalBytes: total))
            return chunk
        }
    }
}

/// Reads one part's content in pieces, and checks that a file keeps the size it had when the
/// part was made.
final class ContentReader {
    private enum Source {
        case data(Data, offset: Int)
        case file(FileHandle, path: String, expected: Int, read: Int)
        case stream(ByteStream.AsyncIterator, buffered: Data, declared: Int?, produced: Int)
    }

    private var source: Source

    private init(_ source: Source) {
        self.source = source
    }

    /// A reader of `part`'s content; a file is opened off the cooperative pool (``BlockingIO``),
    /// as it is read.
    static func open(_ part: MultipartPart) async throws -> ContentReader {
        switch part.source {
        case .data(let data):
            return ContentReader(.data(data, offset: 0))
        case .file(let url, let size):
            guard let handle = await BlockingIO.run({ try? FileHandle(forReadingFrom: url) }) else {
                throw NetworkError.invalidRequest(.unreadableFile(url.path, reason: "cannot open for reading"))
            }
            return ContentReader(.file(handle, path: url.path, expected: size, read: 0))
        case .stream(let length, let make):
            return ContentReader(.stream(make().makeAsyncIterator(), buffered: Data(), declared: length, produced: 0))
        }
    }

    deinit {
        if case .file(let handle, _, _, _) = source { try? handle.close() }
    }

    /// Up to `limit` more bytes, or `nil` at the end.
    func read(upTo limit: Int) async throws -> Data? {
        switch source {
        case .data(let data, let offset):
            guard offset < data.count else { return nil }
            let end = min(data.count, offset + limit)
            source = .data(data, offset: end)
            return data.subdata(in: offset..<end)
        case .file(let handle, let path, let expected, let read):
            let wanted = min(limit, expected - read)
            // Read off the cooperative pool: a file read blocks its thread.
            if wanted <= 0 {
                if let extra = try await BlockingIO.run({ () throws -> Data? in try handle.read(upToCount: 1) }), !extra.isEmpty {
                    throw Self.sizeChanged(path, expected: expected, detail: "it grew")
                }
                return nil
            }
            guard let bytes = try await BlockingIO.run({ () throws -> Data? in try handle.read(upToCount: wanted) }), !bytes.isEmpty else {
                throw Self.sizeChanged(path, expected: expected, detail: "it ended after \(read) bytes")
            }
            source = .file(handle, path: path, expected: expected, read: read + bytes.count)
            return bytes
        case .stream(var iterator, var buffered, let declared, let produced):
            while buffered.isEmpty {
                guard let next = try await iterator.next() else {
                    if let declared, declared != produced {
                        throw NetworkError.invalidRequest(.other("a multipart stream declared \(declared) bytes but produced \(produced)"))
                    }
                    return nil
                }
                buffered = next
            }
            let piece = buffered.prefix(limit)
            buffered = buffered.dropFirst(piece.count)
            if let declared, produced + piece.count > declared {
                throw NetworkError.invalidRequest(.other("a multipart stream declared \(declared) bytes but produced more"))
            }
            source = .stream(iterator, buffered: Data(buffered), declared: declared, produced: produced + piece.count)
            return Data(piece)
        }
    }

    private static func sizeChanged(_ path: String, expected: Int, detail: String) -> NetworkError {
        .invalidRequest(.unreadableFile(path, reason: "changed size during the upload: expected \(expected) bytes, but \(detail)"))
    }
}
