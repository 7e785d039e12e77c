import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// Bodies kept apart from their rows: stored in chunks, replayed, discarded and swept.
extension PostgresQueueStore {
    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody {
        if readOnly { throw QueueError.readOnly(path: location) }
        let reference = RandomUUID.lowercased()
        do {
            // Each chunk commits by itself: a body is never held whole, and one left behind by a
            // crash before its entry commits is swept later (``sweepBodies()``).
            let length = try await client.withConnection { connection in
                try await self.failingOnClose(connection) { try await self.writeBody(stream, reference: reference, on: connection) }
            }
            return .file(name: reference, length: length)
        } catch {
            await discardBodies([.file(name: reference, length: 0)])
            throw PostgresErrors.map(error, location: location)
        }
    }

    /// Writes `stream` as the chunks of `reference` on `connection`; returns its length.
    func writeBody(_ stream: ByteStream, reference: String, on connection: PostgresConnection) async throws -> Int {
        var chunk = Data()
        chunk.reserveCapacity(Self.chunkSize)
        var sequence: Int32 = 0
        var length = 0
        let now = Date().timeIntervalSince1970
        func flush() async throws {
            try await connection.query(PostgresQuery(unsafeSQL: sql("INSERT INTO §.body (ref, seq, data, created_at) VALUES ($1, $2, $3, $4)"))
                .with(reference, sequence, chunk, now), logger: logger)
            sequence += 1
            chunk.removeAll(keepingCapacity: true)
        }
        for try await data in stream {
            var rest = data[...]
            while !rest.isEmpty {
                let taken = rest.prefix(Self.chunkSize - chunk.count)
                chunk.append(contentsOf: taken)
                rest = rest.dropFirst(taken.count)
                length += taken.count
                if chunk.count == Self.chunkSize { try await flush() }
            }
        }
        if !chunk.isEmpty || sequence == 0 { try await flush() }
        return length
    }

    func discardBodies(_ bodies: [StoredBody]) async {
        let references = bodies.compactMap { if case .file(let name, _) = $0 { name } else { nil } }
        guard !references.isEmpty else { return }
        _ = try? await reading { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.body WHERE ref = ANY($1)")).with(references), logger: self.logger)
        }
    }

    func replayBody(_ body: StoredBody) throws(QueueError) -> RequestBody {
        switch body {
        case .inline(let data):
            return .data(data)
        case .file(let reference, let length):
            return .stream(length: length) { [self] in
                // A new reader at every send: a retry or a redirect streams the body again.
                let next = LockedBox<Int32>(0)
                return ByteStream { () async throws -> Data? in
                    let sequence = next.withLock { value in
                        defer { value += 1 }
                        return value
                    }
                    let query = try PostgresQuery(unsafeSQL: self.sql("SELECT data FROM §.body WHERE ref = $1 AND seq = $2")).with(reference, sequence)
                    let rows = try await self.reading { connection in
                        try await connection.query(query, logger: self.logger).decodeAll(Data.self)
                    }
                    if let data = rows.first { return data.isEmpty ? nil : data }
                    if sequence == 0 { throw QueueError.io(path: self.location, reason: "the stored body \(reference) is missing") }
                    return nil
                }
            }
        }
    }

    func sweepBodies() async throws(QueueError) {
        guard !readOnly else { return }
        let cutoff = Date().timeIntervalSince1970 - 600
        _ = try await reading { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                DELETE FROM §.body AS b WHERE b.created_at < $1
                AND NOT EXISTS (SELECT 1 FROM §.entry AS e WHERE e.body_ref = b.ref)
                """)).with(cutoff), logger: self.logger)
        }
    }
}
