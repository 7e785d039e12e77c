import Foundation

/// Writes a byte stream to a file through a temporary file beside it, so a failed or
/// cancelled download never leaves a partial file at the destination.
///
/// The file's creation, writes, close and rename run off the cooperative pool
/// (``BlockingIO``), the chunks in batches of about 1 MiB, one hop each.
enum FileSink {
    /// How many bytes of chunks one hop off the pool writes.
    private static let writeBatch = 1 << 20

    static func write(_ stream: ByteStream, to destination: URL) async throws -> Int {
        let directory = destination.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).partial")
        let opened = await BlockingIO.run { () -> FileHandle? in
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else { return nil }
            return try? FileHandle(forWritingTo: temporary)
        }
        guard let handle = opened else {
            throw NetworkError.invalidRequest(.unreadableFile(destination.path, reason: "cannot create a file in \(directory.path)"))
        }
        var bytes = 0
        do {
            var batch: [Data] = [], batchBytes = 0
            for try await chunk in stream {
                batch.append(chunk)
                batchBytes += chunk.count
                bytes += chunk.count
                if batchBytes >= writeBatch {
                    let chunks = batch
                    try await BlockingIO.run { () throws in for chunk in chunks { try handle.write(contentsOf: chunk) } }
                    batch = []
                    batchBytes = 0
                }
            }
            let chunks = batch
            try await BlockingIO.run { () throws in
                for chunk in chunks { try handle.write(contentsOf: chunk) }
                try handle.close()
                // rename(2) replaces the destination atomically.
                guard rename(temporary.path, destination.path) == 0 else {
                    throw NetworkError.invalidRequest(.unreadableFile(destination.path, reason: String(cString: strerror(errno))))
                }
            }
            return bytes
        } catch {
            await BlockingIO.run {
                try? handle.close()
                try? FileManager.default.removeItem(at: temporary)
            }
            throw error
        }
    }
}
