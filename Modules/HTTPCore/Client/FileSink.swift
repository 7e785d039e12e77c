import Foundation

/// Writes a byte stream to a file through a temporary file beside it, so a failed or
/// cancelled download never leaves a partial file at the destination.
enum FileSink {
    static func write(_ stream: ByteStream, to destination: URL) async throws -> Int {
        let directory = destination.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).partial")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = try? FileHandle(forWritingTo: temporary) else {
            throw NetworkError.invalidRequest(.unreadableFile(destination.path, reason: "cannot create a file in \(directory.path)"))
        }
        var bytes = 0
        do {
            for try await chunk in stream {
                try handle.write(contentsOf: chunk)
                bytes += chunk.count
            }
            try handle.close()
            // rename(2) replaces the destination atomically.
            guard rename(temporary.path, destination.path) == 0 else {
                throw NetworkError.invalidRequest(.unreadableFile(destination.path, reason: String(cString: strerror(errno))))
            }
            return bytes
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}
