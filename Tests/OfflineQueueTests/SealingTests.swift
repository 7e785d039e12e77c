import CourierTesting
import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO
import QueueEncryption
import QueueTestSupport
import Testing
import TestSupport

/// Sealing at rest (`QueueSealing`), from outside: what the stores hold, what a server
/// receives, and what a changed row, a missing or wrong key or a required seal do.
@Suite("Sealing: entries encrypted at rest on every store")
struct SealingTests {
    static let marker = "zq-marker-7c1e"

    /// A queue sealing with `keyring` (or with `mode` and no keyring).
    func queue(
        _ store: TestStore, _ server: TestHTTPServer, keyring: Keyring?, mode: QueueSealing.Mode = .on,
        inlineLimit: Int = 64 * 1024, timeout: Duration = .hangGuard
    ) async throws -> OfflineQueue {
        try await makeQueue(on: store, server: server, timeout: timeout) {
            $0.sealing = QueueSealing(mode: mode, keyring: keyring)
            $0.inlineBodyLimit = inlineLimit
        }
    }

    @Test("a marker in URL, header and body of 1,000 entries is nowhere at rest, and every request arrives as enqueued", arguments: StoreKind.allCases)
    func markerNowhereAtRest(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let queue = try await queue(store, server, keyring: keyring, inlineLimit: 4096)
            var expected: [String: (target: String, crc: UInt32, size: Int)] = [:]
            var requests: [QueuedRequest] = []
            for index in 0..<1000 {
                // Every 50th body is kept apart (above the inline limit), in several chunks.
                let size = index % 50 == 0 ? 150_000 + index : 40 + index % 300
                var body = Data(repeating: UInt8(ascii: "."), count: size)
                body.replaceSubrange(0..<Self.marker.utf8.count, with: Data(Self.marker.utf8))
                body.replaceSubrange((size - Self.marker.utf8.count)..<size, with: Data(Self.marker.utf8))
                let key = "key-\(index)"
                let target = "/echo/orders/\(Self.marker)/\(index)?who=\(Self.marker)&n=\(index)"
                expected[key] = (target, CRC32.checksum(body), size)
                requests.append(QueuedRequest(
                    method: "POST", url: server.url(target).absoluteString, headers: [("X-Private", "\(Self.marker)-\(index)")],
                    body: .data(body), options: EnqueueOptions(idempotencyKey: key)
                ))
            }
            for batch in stride(from: 0, to: requests.count, by: 100) {
                _ = try await queue.enqueue(Array(requests[batch..<(batch + 100)]))
            }
            let status = try await queue.sealStatus()
            #expect(status.sealed == [keyring.primary.id.rawValue: 1000])
            #expect(status.clear == 0)
            // Listings work without opening anything: the origin and method stay clear.
            let listed = try await queue.entries(EntryFilter(limit: 1))
            #expect(listed.first?.url == server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")))
            #expect(listed.first?.headers.isEmpty == true)
            #expect(listed.first?.sealKeyID == keyring.primary.id.rawValue)
            try await expectNoMarker(in: store)

            let summary = try await drainUntilSettled(queue)
            #expect(summary.delivered == 1000)
            #expect(server.requests.count == 1000)
            for request in server.requests {
                let key = try #require(request.values(of: "Idempotency-Key").first)
                let want = try #require(expected[key])
                #expect(request.target == want.target)
                #expect(request.bodySize == want.size)
                #expect(request.bodyCRC32 == want.crc)
                #expect(request.values(of: "X-Private") == ["\(Self.marker)-\(key.dropFirst(4))"])
            }
            await queue.close()
            await server.shutdown()
        }
    }

    /// Fails when the marker's bytes appear in any file of the SQLite queue's folder (the
    /// database, its WAL, body files) or in a `pg_dump` of the PostgreSQL queue's schema.
    func expectNoMarker(in store: TestStore, dumpAtLeast: Int = 100_000, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let marker = Data(Self.marker.utf8)
        switch store.kind {
        case .memory:
            return
        case .sqlite:
            var scanned = 0
            let files = FileManager.default.enumerator(at: store.folder.url, includingPropertiesForKeys: nil)
            while let url = files?.nextObject() as? URL {
                guard let data = FileManager.default.contents(atPath: url.path) else { continue }
                scanned += 1
                #expect(data.range(of: marker) == nil, "the marker is in \(url.lastPathComponent)", sourceLocation: sourceLocation)
            }
            #expect(scanned >= 3, "the database, its WAL and body files were read", sourceLocation: sourceLocation)
        case .postgres:
            let location = try PostgresLocation(url: store.path)
            let dump = try await runTool(
                "/usr/bin/pg_dump",
                ["-h", location.host, "-p", String(location.port), "-U", location.user, "-d", location.database,
                 "-n", store.schema ?? "", "--data-only"]
            )
            #expect(dump.status == 0, "\(dump.errorText)", sourceLocation: sourceLocation)
            #expect(dump.stdout.count > dumpAtLeast, "the dump holds the rows and body chunks", sourceLocation: sourceLocation)
            #expect(dump.stdout.range(of: marker) == nil, "the marker is in the dump", sourceLocation: sourceLocation)
            // pg_dump writes bytea as hex: look for the marker's hex digits too.
            let hex = marker.map { String(format: "%02x", $0) }.joined()
            #expect(String(decoding: dump.stdout, as: UTF8.self).range(of: hex) == nil, sourceLocation: sourceLocation)
        }
    }

    @Test("bodies of 0, 1, 64 KiB ± 1 and 1 MiB + 3 bytes arrive with their exact bytes", arguments: StoreKind.allCases)
    func bodySizes(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await queue(store, server, keyring: Keyring.generate(), inlineLimit: 1000)
            let sizes = [0, 1, 65_535, 65_536, 65_537, 1_048_579]
            var crcs: [String: (UInt32, Int)] = [:]
            for size in sizes {
                let body = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 31, addend: 7), count: size)
                let ticket = try await queue.enqueue(method: "PUT", url: server.url("/echo/b/\(size)").absoluteString, body: .data(body))
                crcs[ticket.idempotencyKey] = (CRC32.checksum(body), size)
                let entry = try #require(try await queue.entry(ticket.id))
                #expect(entry.bodyLength == size)
                #expect(entry.body?.length == SealFormat.sealedSize(plaintextSize: size))
            }
            #expect(try await drainUntilSettled(queue).delivered == sizes.count)
            for request in server.requests {
                let want = try #require(crcs[request.values(of: "Idempotency-Key").first ?? ""])
                #expect(request.bodyCRC32 == want.0)
                #expect(request.bodySize == want.1)
            }
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("bodies kept apart arrive whole whether the plaintext their check opened is kept for the send (300 KB: two fit) or they are opened again (700 KB: none fits), 8 at concurrency 4, and nothing is held after", arguments: StoreKind.allCases)
    func verifiedPlaintextKeptOrOpenedAgain(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let (small, large) = (300_001, 700_001)
            let queue = try await makeQueue(on: store, server: server, concurrency: 4) {
                $0.sealing = .on(Keyring.generate())
                $0.inlineBodyLimit = 1000
                $0.sealing.verifiedBodyMemory = 2 * small
            }
            var sent: [String: (crc: UInt32, size: Int)] = [:]
            for index in 0..<8 {
                let size = index.isMultiple(of: 2) ? small : large
                let body = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 7, addend: index), count: size)
                let ticket = try await queue.enqueue(method: "PUT", url: server.url("/echo/kept/\(index)").absoluteString, body: .data(body))
                sent[ticket.idempotencyKey] = (CRC32.checksum(body), size)
            }
            #expect(try await drainUntilSettled(queue).delivered == 8)
            #expect(server.requests.count == 8)
            for request in server.requests {
                let want = try #require(sent[request.values(of: "Idempotency-Key").first ?? ""])
                #expect(request.bodySize == want.size)
                #expect(request.bodyCRC32 == want.crc)
            }
            #expect(queue.verifiedBodyMemory.held == 0, "every hold was given back")
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("a 100 MiB body streamed in is sealed and sent in full")
    func hundredMiB() async throws {
        let store = try TestStore(.sqlite)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            // A debug build beside the other suites may take minutes to send 100 MiB: no attempt
            // may time out (the test asserts one delivery, not a speed).
            let queue = try await queue(store, server, keyring: Keyring.generate(), timeout: .seconds(900))
            let size = 100 * 1024 * 1024
            let piece = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 13), count: 1024 * 1024)
            var crc = CRC32()
            for _ in 0..<100 { crc.update(piece) }
            let pieces = LockedBox(0)
            let body = RequestBody.stream(length: size) {
                pieces.withLock { $0 = 0 }
                return ByteStream(next: {
                    pieces.withLock { count -> Data? in
                        guard count < 100 else { return nil }
                        count += 1
                        return piece
                    }
                })
            }
            let ticket = try await queue.enqueue(method: "PUT", url: server.url("/echo/big").absoluteString, body: body)
            let delivered = try await queue.drain().delivered
            let lastError = try await queue.entry(ticket.id)?.lastError
            #expect(delivered == 1, "\(lastError ?? "no error recorded")")
            #expect(server.requests.last?.bodySize == size)
            #expect(server.requests.last?.bodyCRC32 == crc.value)
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("entries in clear and sealed ones are both delivered by a queue with the keyring", arguments: StoreKind.allCases)
    func mixedQueue(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let clear = try await queue(store, server, keyring: nil, mode: .off)
            _ = try await clear.enqueue(method: "POST", url: server.url("/echo/clear?a=1").absoluteString, body: .data(Data("clear".utf8)))
            await clear.close()
            let sealed = try await queue(store, server, keyring: keyring)
            _ = try await sealed.enqueue(method: "POST", url: server.url("/echo/sealed?a=2").absoluteString, body: .data(Data("sealed".utf8)))
            let status = try await sealed.sealStatus()
            #expect(status.clear == 1)
            #expect(status.sealed == [keyring.primary.id.rawValue: 1])
            #expect(try await sealed.drain().delivered == 2)
            #expect(Set(server.requests.map(\.target)) == ["/echo/clear?a=1", "/echo/sealed?a=2"])
            await sealed.close()
            await server.shutdown()
        }
    }

    @Test("each store keeps the documented layout: a row opens with QueueEncryption alone", arguments: StoreKind.shared)
    func documentedLayout(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let queue = try await queue(store, server, keyring: keyring)
            let url = server.url("/echo/orders?id=42").absoluteString
            let ticket = try await queue.enqueue(
                method: "POST", url: url, headers: [("X-Private", "v")], body: .data(Data("{\"total\":12}".utf8)),
                options: EnqueueOptions(idempotencyKey: "order-42")
            )
            let queueID = try await queue.sealStatus().queueID
            await queue.close()
            // Read the row as stored, with no Courier code between the bytes and the check.
            let rows = RowEditor(store: store)
            let seal = try await rows.seal(ticket.id)
            let body = try await rows.inlineBody(ticket.id)
            #expect(seal.first == 3, "format version 3: a small body is sealed with its request")
            let salt = seal.dropFirst().prefix(16)
            let cipher = try EntryCipher(
                opening: EntrySeal(version: 3, keyID: keyring.primary.id, salt: Data(salt)), with: keyring, queueID: queueID, idempotencyKey: "order-42"
            )
            // One value, field `entry`: the seal holds the request's ciphertext, the body column
            // the body's ciphertext and the tag. The request: the target's length (32-bit
            // big-endian), the target, the header lines.
            let target = "/echo/orders?id=42"
            #expect(seal.count == 17 + 4 + target.utf8.count + "X-Private: v\n".utf8.count)
            #expect(body.count == "{\"total\":12}".utf8.count + SealFormat.tagSize)
            let opened = try cipher.openJoined(request: Data(seal.dropFirst(17)), body: body)
            let request = opened.request
            #expect(request.count == seal.count - 17)
            #expect(request.prefix(4) == Data([0, 0, 0, UInt8(target.utf8.count)]))
            #expect(String(decoding: request.dropFirst(4), as: UTF8.self) == target + "X-Private: v\n")
            #expect(String(decoding: opened.body, as: UTF8.self) == "{\"total\":12}")
            await server.shutdown()
        }
    }

    @Test("a body kept in the row is sealed with its request while both fit one chunk (version 3), apart past that (version 2), and each arrives whole", arguments: StoreKind.shared)
    func joinedUpToOneChunk(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await queue(store, server, keyring: Keyring.generate(), inlineLimit: 64 * 1024)
            // The request's plaintext is the target's length (4 bytes) and the target: 4 + 7.
            let fits = SealFormat.chunkSize - 4 - "/echo/j".utf8.count
            let sizes = [(0, 3), (1, 3), (fits, 3), (fits + 1, 2), (SealFormat.chunkSize, 2)]
            let rows = RowEditor(store: store)
            var crcs: [String: (UInt32, Int)] = [:]
            for (size, version) in sizes {
                let body = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 29, addend: 3), count: size)
                let ticket = try await queue.enqueue(method: "PUT", url: server.url("/echo/j").absoluteString, body: .data(body))
                crcs[ticket.idempotencyKey] = (CRC32.checksum(body), size)
                #expect(try await rows.seal(ticket.id).first == UInt8(version), "a body of \(size) bytes")
                let entry = try #require(try await queue.entry(ticket.id))
                #expect(entry.bodyLength == size)
                #expect(try await rows.inlineBody(ticket.id).count == SealFormat.sealedSize(plaintextSize: size))
            }
            #expect(try await drainUntilSettled(queue).delivered == sizes.count)
            #expect(server.requests.count == sizes.count)
            for request in server.requests {
                let want = try #require(crcs[request.values(of: "Idempotency-Key").first ?? ""])
                #expect(request.bodyCRC32 == want.0 && request.bodySize == want.1)
            }
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("an entry sealed in format version 2 with its body apart in the row (before version 3) still opens and is delivered as enqueued", arguments: StoreKind.shared)
    func version2EntriesStillOpen(_ kind: StoreKind) async throws {
        // As version 2 wrote it: 0x02, salt, the sealed request; the body sealed as a field
        // of its own.
        try await rewrittenEntryIsDelivered(kind, version: 2, path: "/echo/v2/orders?id=8", header: "two") { cipher, salt, target, headers, body in
            var blob = Data([2]) + salt
            blob.append(cipher.seal(withUnsafeBytes(of: UInt32(target.count).bigEndian) { Data($0) } + target + headers, field: .request))
            return (blob, cipher.seal(body, field: .body))
        }
    }

    @Test("an entry sealed in format version 1 (before version 2) still opens and is delivered as enqueued", arguments: StoreKind.shared)
    func version1EntriesStillOpen(_ kind: StoreKind) async throws {
        // As version 1 wrote it: 0x01, salt, len(sealed target), sealed target, sealed
        // headers; the body sealed under version 1's key for the field.
        try await rewrittenEntryIsDelivered(kind, version: 1, path: "/echo/v1/orders?id=7", header: "one") { cipher, salt, target, headers, body in
            let sealedTarget = cipher.seal(target, field: .target)
            var blob = Data([1]) + salt
            withUnsafeBytes(of: UInt32(sealedTarget.count).bigEndian) { blob.append(contentsOf: $0) }
            blob.append(sealedTarget)
            blob.append(cipher.seal(headers, field: .headers))
            return (blob, cipher.seal(body, field: .body))
        }
    }

    /// An entry enqueued, its row rewritten by `rewrite` (given the cipher of `version` under
    /// a fixed salt, the salt, the target, the header lines and the body; returning the seal
    /// and the sealed body) as an older Courier wrote it, then drained: it arrives as enqueued.
    private func rewrittenEntryIsDelivered(
        _ kind: StoreKind, version: Int, path: String, header: String,
        rewrite: (EntryCipher, Data, Data, Data, Data) -> (seal: Data, body: Data)
    ) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let queue = try await queue(store, server, keyring: keyring)
            let body = Data("{\"v\":\(version)}".utf8)
            let key = "v\(version)-entry"
            let ticket = try await queue.enqueue(
                method: "POST", url: server.url(path).absoluteString, headers: [("X-Private", header)], body: .data(body),
                options: EnqueueOptions(idempotencyKey: key)
            )
            let queueID = try await queue.sealStatus().queueID
            await queue.close()
            let salt = Data((0..<16).map { UInt8($0 * (4 + version) + 1) })
            let cipher = try EntryCipher(
                opening: EntrySeal(version: version, keyID: keyring.primary.id, salt: salt), with: keyring, queueID: queueID, idempotencyKey: key
            )
            let (seal, sealedBody) = rewrite(cipher, salt, Data(path.utf8), Data("X-Private: \(header)\n".utf8), body)
            let rows = RowEditor(store: store)
            try await rows.setSeal(ticket.id, seal)
            try await rows.setInlineBody(ticket.id, sealedBody)
            let reopened = try await self.queue(store, server, keyring: keyring)
            #expect(try await reopened.drain().delivered == 1)
            let received = try #require(server.requests.first)
            #expect(received.target == path)
            #expect(received.values(of: "X-Private") == [header])
            #expect(received.bodySize == body.count && received.bodyCRC32 == CRC32.checksum(body))
            await reopened.close()
            await server.shutdown()
        }
    }

    // MARK: - Keys missing or wrong

    @Test("without the key its entries were sealed with, a drain refuses before it touches a row", arguments: StoreKind.allCases)
    func missingKey(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let first = try await queue(store, server, keyring: keyring)
            for index in 0..<3 { _ = try await first.enqueue(method: "POST", url: server.url("/echo/k/\(index)").absoluteString) }
            await first.close()
            let id = keyring.primary.id.rawValue
            for other in [Keyring.generate(), nil] {
                let second = try await queue(store, server, keyring: other, mode: other == nil ? .off : .on)
                await #expect {
                    _ = try await second.drain()
                } throws: { error in
                    guard let error = error as? QueueError, error.kind == .keyUnavailable else { return false }
                    return error.description.contains(id) && (other == nil || error.description.contains("3 entries"))
                }
                await second.close()
            }
            try await expectUntouched(store, server, count: 3)
        }
    }

    @Test("other bytes under a key id the queue knows are refused by their key-check value", arguments: StoreKind.allCases)
    func wrongKeyBytes(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let first = try await queue(store, server, keyring: keyring)
            for index in 0..<2 { _ = try await first.enqueue(method: "POST", url: server.url("/echo/w/\(index)").absoluteString) }
            await first.close()
            let impostor = try Keyring(primary: QueueKey(id: keyring.primary.id, bytes: Data((0..<32).map { _ in UInt8.random(in: 0...255) })))
            let second = try await queue(store, server, keyring: impostor)
            await #expect {
                _ = try await second.drain()
            } throws: { error in
                guard let error = error as? QueueError, error.kind == .keyUnavailable else { return false }
                return error.description.contains("key-check value differs") && error.description.contains(keyring.primary.id.rawValue)
            }
            // Nor does it seal anything with them.
            await #expect(throws: QueueError.self) {
                _ = try await second.enqueue(method: "POST", url: server.url("/echo/w/new").absoluteString)
            }
            await second.close()
            try await expectUntouched(store, server, count: 2)
        }
    }

    @Test("required: no enqueue without a keyring, and no queue holding entries in clear", arguments: StoreKind.allCases)
    func required(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let bare = try await queue(store, server, keyring: nil, mode: .required)
            await #expect {
                _ = try await bare.enqueue(method: "POST", url: server.url("/echo/r").absoluteString, body: .data(Data("x".utf8)))
            } throws: { error in
                (error as? QueueError)?.kind == .keyUnavailable
            }
            #expect(try await bare.counts().total == 0)
            await bare.close()

            let clear = try await queue(store, server, keyring: nil, mode: .off)
            _ = try await clear.enqueue(method: "POST", url: server.url("/echo/r/clear").absoluteString)
            await clear.close()
            let keyring = Keyring.generate()
            let strict = try await queue(store, server, keyring: keyring, mode: .required)
            await #expect {
                _ = try await strict.enqueue(method: "POST", url: server.url("/echo/r/2").absoluteString)
            } throws: { error in
                guard let error = error as? QueueError, error.kind == .keyUnavailable else { return false }
                return error.description.contains("1 entry is stored in clear") && error.description.contains("sync keys encrypt")
            }
            #expect(try await strict.counts().total == 1)
            // Sealed in place, the queue is accepted.
            let summary = try await strict.reseal(.clear, keyring: keyring)
            #expect(summary.resealed == 1)
            _ = try await strict.enqueue(method: "POST", url: server.url("/echo/r/3").absoluteString)
            #expect(try await strict.sealStatus().sealed == [keyring.primary.id.rawValue: 2])
            #expect(try await strict.drain().delivered == 2)
            #expect(Set(server.requests.map(\.target)) == ["/echo/r/clear", "/echo/r/3"])
            await strict.close()
            await server.shutdown()
        }
    }

    @Test("rotation re-seals every entry under the new primary, bodies kept apart included", arguments: StoreKind.allCases)
    func rotation(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            var keyring = Keyring.generate()
            let old = keyring.primary.id.rawValue
            let first = try await queue(store, server, keyring: keyring, inlineLimit: 1000)
            var crcs: [String: UInt32] = [:]
            for index in 0..<40 {
                let body = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 1, addend: index), count: index % 4 == 0 ? 200_000 : 100 + index)
                let ticket = try await first.enqueue(method: "POST", url: server.url("/echo/rot/\(index)?q=\(index)").absoluteString, body: .data(body))
                crcs[ticket.idempotencyKey] = CRC32.checksum(body)
            }
            await first.close()
            let new = keyring.addPrimary().id.rawValue
            let second = try await queue(store, server, keyring: keyring, inlineLimit: 1000)
            let summary = try await second.reseal(.otherKeys, keyring: keyring, batchSize: 7)
            #expect(summary.resealed == 40)
            #expect(summary.batches == 6)
            #expect(try await second.sealStatus().sealed == [new: 40])
            #expect(try await second.reseal(.otherKeys, keyring: keyring).resealed == 0)
            // The old key is no longer needed.
            await second.close()
            let onlyNew = try Keyring(primary: try #require(keyring[KeyID(new)!]))
            let third = try await queue(store, server, keyring: onlyNew, inlineLimit: 1000)
            #expect(try await drainUntilSettled(third).delivered == 40)
            for request in server.requests {
                #expect(request.bodyCRC32 == crcs[request.values(of: "Idempotency-Key").first ?? ""])
            }
            #expect(!old.isEmpty)
            await third.close()
            await server.shutdown()
        }
    }

    /// Nothing was sent and every entry is still pending with no attempt.
    func expectUntouched(_ store: TestStore, _ server: TestHTTPServer, count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reader = try await queue(store, server, keyring: nil, mode: .off)
        let entries = try await reader.entries()
        #expect(entries.count == count, sourceLocation: sourceLocation)
        #expect(entries.allSatisfy { $0.state == .pending && $0.attempts == 0 }, sourceLocation: sourceLocation)
        #expect(server.requests.isEmpty, sourceLocation: sourceLocation)
        await reader.close()
        await server.shutdown()
    }
}

/// A row changed behind the queue's back: each change makes the entry fail to open, so
/// nothing is sent, nothing counted, and the error names the entry.
@Suite("Sealing: changed rows are never sent")
struct SealTamperTests {
    enum Change: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case swapSeals, swapSalts, swapBodies, flipTargetByte, flipBodyByte, dropLastBodyChunk, swapKeyIDs
        /// A byte of a body kept apart flipped in its second sealed chunk.
        case flipBodyFileByte
        /// The same two changes of a body kept apart, with no memory for verified plaintext: the
        /// body is verified in a pass of its own, then opened again as it is sent.
        case dropLastBodyChunkOpenedTwice, flipBodyFileByteOpenedTwice

        var testDescription: String { rawValue }

        var fileBodies: Bool { [.dropLastBodyChunk, .flipBodyFileByte, .dropLastBodyChunkOpenedTwice, .flipBodyFileByteOpenedTwice].contains(self) }
        var verifiedBodyMemory: Int { [.dropLastBodyChunkOpenedTwice, .flipBodyFileByteOpenedTwice].contains(self) ? 0 : QueueSealing().verifiedBodyMemory }
    }

    static let cases: [(StoreKind, Change)] = StoreKind.shared.flatMap { kind in Change.allCases.map { (kind, $0) } }

    @Test("a changed row is refused whole: no request, attempts unchanged, the entry named", arguments: cases)
    func changedRow(_ kind: StoreKind, _ change: Change) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            var keyring = Keyring.generate()
            let keyring2 = keyring
            let fileBodies = change.fileBodies
            let first = try await makeQueue(on: store, server: server, concurrency: 1) {
                $0.sealing = .on(keyring2)
                $0.inlineBodyLimit = fileBodies ? 1000 : 64 * 1024
            }
            let size = fileBodies ? 200_000 : 500
            let a = try await first.enqueue(method: "POST", url: server.url("/echo/a?x=1").absoluteString, body: .data(Data(repeating: 1, count: size)))
            let b = try await first.enqueue(method: "POST", url: server.url("/echo/b?x=2").absoluteString, body: .data(Data(repeating: 2, count: size)))
            if change == .swapKeyIDs {
                // A second key seals B, so the two rows name different keys.
                await first.close()
                keyring.addPrimary()
            } else {
                await first.close()
            }
            let keyring3 = keyring
            if change == .swapKeyIDs {
                let second = try await makeQueue(on: store, server: server, concurrency: 1) { $0.sealing = .on(keyring3) }
                _ = try await second.reseal(.otherKeys, keyring: keyring3)
                await second.close()
                // Now both are under the new key: seal A again under the old one, by hand below.
            }
            let rows = RowEditor(store: store)
            switch change {
            case .swapSeals:
                let (sa, sb) = (try await rows.seal(a.id), try await rows.seal(b.id))
                try await rows.setSeal(a.id, sb)
                try await rows.setSeal(b.id, sa)
            case .swapSalts:
                var (sa, sb) = (try await rows.seal(a.id), try await rows.seal(b.id))
                let salt = 1..<17
                let saltA = sa[salt]
                sa.replaceSubrange(salt, with: sb[salt])
                sb.replaceSubrange(salt, with: saltA)
                try await rows.setSeal(a.id, sa)
                try await rows.setSeal(b.id, sb)
            case .swapBodies:
                let (ba, bb) = (try await rows.inlineBody(a.id), try await rows.inlineBody(b.id))
                try await rows.setInlineBody(a.id, bb)
                try await rows.setInlineBody(b.id, ba)
            case .flipTargetByte:
                var sa = try await rows.seal(a.id)
                sa[sa.startIndex + 22] ^= 0x01
                try await rows.setSeal(a.id, sa)
            case .flipBodyByte:
                var ba = try await rows.inlineBody(a.id)
                ba[ba.startIndex + 100] ^= 0x80
                try await rows.setInlineBody(a.id, ba)
            case .dropLastBodyChunk, .dropLastBodyChunkOpenedTwice:
                try await rows.dropLastBodyChunk(a.id)
                try await rows.dropLastBodyChunk(b.id)
            case .flipBodyFileByte, .flipBodyFileByteOpenedTwice:
                try await rows.flipBodyFileByte(a.id, at: SealFormat.sealedChunkSize + 100)
            case .swapKeyIDs:
                // Both rows under the new key; A's row claims the old key's id.
                try await rows.setKeyID(a.id, keyring.keys[0].id.rawValue)
            }
            let queue = try await makeQueue(on: store, server: server, concurrency: 1) {
                $0.sealing = .on(keyring3)
                $0.sealing.verifiedBodyMemory = change.verifiedBodyMemory
            }
            await #expect {
                _ = try await queue.drain()
            } throws: { error in
                guard let error = error as? QueueError, error.kind == .sealBroken else { return false }
                return error.entryID == a.id && error.description.contains("entry \(a.id)")
            }
            #expect(server.requests.isEmpty)
            for id in [a.id, b.id] {
                let entry = try #require(try await queue.entry(id))
                #expect(entry.state == .pending)
                #expect(entry.attempts == 0)
            }
            await queue.close()
            await server.shutdown()
        }
    }
}

/// Reads and writes an entry's stored seal and body directly, on SQLite or PostgreSQL.
struct RowEditor {
    let store: TestStore

    private func sqlite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) throws -> T {
        let db = try DatabaseQueue(path: store.path)
        return try db.write(body)
    }

    private func postgres(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws -> [PostgresRow] {
        try await withPostgres(store.path) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: testLogger).collect()
        }
    }

    private var table: String { "\"\(store.schema ?? "")\".entry" }

    func seal(_ id: EntryID) async throws -> Data { try await blob("seal", id) }
    func setSeal(_ id: EntryID, _ value: Data) async throws { try await setBlob("seal", id, value) }
    func inlineBody(_ id: EntryID) async throws -> Data { try await blob("body", id) }
    func setInlineBody(_ id: EntryID, _ value: Data) async throws { try await setBlob("body", id, value) }

    func setKeyID(_ id: EntryID, _ key: String) async throws {
        if store.kind == .sqlite {
            try sqlite { try $0.execute(sql: "UPDATE entry SET seal_key = ? WHERE id = ?", arguments: [key, id]) }
            return
        }
        var binds = PostgresBindings()
        binds.append(key)
        binds.append(id)
        _ = try await postgres("UPDATE \(table) SET seal_key = $1 WHERE id = $2", binds)
    }

    private func blob(_ column: String, _ id: EntryID) async throws -> Data {
        if store.kind == .sqlite {
            return try sqlite { try Data.fetchOne($0, sql: "SELECT \(column) FROM entry WHERE id = ?", arguments: [id]) ?? Data() }
        }
        var binds = PostgresBindings()
        binds.append(id)
        let rows = try await postgres("SELECT \(column) FROM \(table) WHERE id = $1", binds)
        let bytes = try rows.first?.decode(ByteBuffer.self)
        return bytes.map { Data($0.readableBytesView) } ?? Data()
    }

    private func setBlob(_ column: String, _ id: EntryID, _ value: Data) async throws {
        if store.kind == .sqlite {
            try sqlite { try $0.execute(sql: "UPDATE entry SET \(column) = ? WHERE id = ?", arguments: [value, id]) }
            return
        }
        var binds = PostgresBindings()
        binds.append(ByteBuffer(bytes: value))
        binds.append(id)
        _ = try await postgres("UPDATE \(table) SET \(column) = $1 WHERE id = $2", binds)
    }

    /// Flips one byte, at `offset`, of the sealed body kept apart.
    func flipBodyFileByte(_ id: EntryID, at offset: Int) async throws {
        try await rewriteBodyFile(id) { $0[$0.startIndex + offset] ^= 0x40 }
    }

    /// Cuts the sealed body kept apart after its second-to-last sealed chunk.
    func dropLastBodyChunk(_ id: EntryID) async throws {
        try await rewriteBodyFile(id) { whole in
            let count = (whole.count + SealFormat.sealedChunkSize - 1) / SealFormat.sealedChunkSize
            whole = whole.prefix((count - 1) * SealFormat.sealedChunkSize)
        }
    }

    /// The sealed body kept apart, read whole, changed by `change` and written back.
    private func rewriteBodyFile(_ id: EntryID, _ change: (inout Data) -> Void) async throws {
        if store.kind == .sqlite {
            let name = try sqlite { try String.fetchOne($0, sql: "SELECT body_file FROM entry WHERE id = ?", arguments: [id]) } ?? ""
            let url = store.folder.url.appendingPathComponent("queue.db.bodies").appendingPathComponent(name)
            var whole = try Data(contentsOf: url)
            change(&whole)
            try whole.write(to: url)
            return
        }
        var binds = PostgresBindings()
        binds.append(id)
        let rows = try await postgres("SELECT body_ref FROM \(table) WHERE id = $1", binds)
        let ref = try #require(try rows.first?.decode(String.self))
        // Rewrite the stored chunks as one.
        var refBinds = PostgresBindings()
        refBinds.append(ref)
        let chunks = try await postgres("SELECT data FROM \"\(store.schema ?? "")\".body WHERE ref = $1 ORDER BY seq", refBinds)
        var whole = Data()
        for chunk in chunks { whole.append(contentsOf: try chunk.decode(ByteBuffer.self).readableBytesView) }
        change(&whole)
        _ = try await postgres("DELETE FROM \"\(store.schema ?? "")\".body WHERE ref = $1", refBinds)
        var insert = PostgresBindings()
        insert.append(ref)
        insert.append(ByteBuffer(bytes: whole))
        _ = try await postgres("INSERT INTO \"\(store.schema ?? "")\".body (ref, seq, data, created_at) VALUES ($1, 0, $2, 0)", insert)
    }
}
