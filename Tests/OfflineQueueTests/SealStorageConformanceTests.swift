import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// The sealing role of the storage contract (``QueueSealStorage``), run against every store
/// (SQLite, PostgreSQL, memory) as ``StoreConformanceTests`` runs the rest: the queue's id, key
/// checks, entries' seals kept as given, and re-sealing in place.
@Suite("Seal storage conformance: the sealing role, on every store")
struct SealStorageConformanceTests {
    @Test("a new store has a queue id of its own, no key checks and no entries", arguments: StoreKind.allCases)
    func newCatalog(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let catalog = try await contract.storage.sealCatalog()
            #expect(catalog.queueID != UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
            #expect(catalog.keyChecks.isEmpty && catalog.entries.isEmpty && catalog.clear == 0)
            #expect(try await contract.storage.sealCatalog() == catalog, "read again: the same")
            let other = try await Contract(kind)
            try await removing(other) { () async throws in
                #expect(try await other.storage.sealCatalog().queueID != catalog.queueID, "another queue: another id")
            }
        }
    }

    @Test("the queue id, the key checks and the seals stay across opens of the same store", arguments: StoreKind.allCases)
    func catalogAcrossOpens(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let before = try await contract.storage.sealCatalog()
            _ = try await contract.storage.recordKeyCheck(keyID: "k1", checkValue: "check-1")
            let ids = try await insert(contract, [nil, seal("k1")])
            let reopened = try await contract.drainer()
            let after = try await reopened.store.sealCatalog()
            #expect(after.queueID == before.queueID)
            #expect(after.keyChecks == ["k1": "check-1"] && after.entries == [nil: 1, "k1": 1])
            #expect(try await reopened.store.entry(ids[1], now: contract.now)?.seal == seal("k1"))
            await reopened.close()
        }
    }

    @Test("a key check is recorded once: a later value for the same key id returns the first", arguments: StoreKind.allCases)
    func keyChecks(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) { () async throws in
            #expect(try await contract.storage.recordKeyCheck(keyID: "k1", checkValue: "first") == "first")
            #expect(try await contract.storage.recordKeyCheck(keyID: "k1", checkValue: "second") == "first")
            #expect(try await contract.storage.recordKeyCheck(keyID: "k2", checkValue: "other") == "other")
            #expect(try await contract.storage.sealCatalog().keyChecks == ["k1": "first", "k2": "other"])
        }
    }

    @Test("the catalog counts entries per key id and in clear, whatever their state", arguments: StoreKind.allCases)
    func catalogCounts(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await insert(contract, [nil, seal("k1"), nil, seal("k2"), seal("k1")])
            _ = try await contract.claim(limit: 2)
            _ = try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 200))])
            let catalog = try await contract.storage.sealCatalog()
            #expect(catalog.entries == [nil: 2, "k1": 2, "k2": 1])
            #expect(catalog.clear == 2 && catalog.keyChecks.isEmpty)
        }
    }

    @Test("a seal is kept as given: read back by id, in listings and in a claim; an entry in clear has none", arguments: StoreKind.allCases)
    func sealRoundTrip(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let blob = Data([0, 1, 2, 0, 255, 254] + (0..<500).map { UInt8($0 % 256) })
            let sealed = StoredSeal(keyID: "3fa9c01e", blob: blob)
            let ids = try await insert(contract, [sealed, nil, StoredSeal(keyID: "empty", blob: Data())])
            #expect(try await contract.storage.entry(ids[0], now: contract.now)?.seal == sealed)
            #expect(try await contract.storage.entry(ids[1], now: contract.now)?.seal == nil)
            #expect(try await contract.storage.entry(ids[2], now: contract.now)?.seal == StoredSeal(keyID: "empty", blob: Data()))
            #expect(try await contract.storage.entries(EntryFilter(), now: contract.now).map(\.seal) == [sealed, nil, StoredSeal(keyID: "empty", blob: Data())])
            let claimed = try await contract.claim().claimed
            #expect(claimed.map(\.id) == ids)
            #expect(claimed.map(\.seal) == [sealed, nil, StoredSeal(keyID: "empty", blob: Data())])
            #expect(claimed.first?.sealKeyID == "3fa9c01e")
        }
    }

    @Test("entries to re-seal: in clear or under another key, in id order, paged by after and limit, none in flight", arguments: StoreKind.allCases)
    func resealSelection(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            // c3, the most urgent, is claimed: in flight.
            let ids = try await insert(contract, [nil, seal("k1"), seal("k2"), nil, seal("k1"), nil, seal("k2")], priorities: [0, 0, 0, 0, 0, 9, 9])
            let (c1, s1, s2, c2, s3, c3, s4) = (ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6])
            #expect(try await contract.claim(limit: 2).claimed.map(\.id) == [c3, s4])
            let storage = contract.storage
            #expect(try await storage.entriesToReseal(.clear, after: nil, limit: 10, now: contract.now).map(\.id) == [c1, c2])
            #expect(try await storage.entriesToReseal(.notUnder("k1"), after: nil, limit: 10, now: contract.now).map(\.id) == [s2])
            #expect(try await storage.entriesToReseal(.notUnder("k3"), after: nil, limit: 10, now: contract.now).map(\.id) == [s1, s2, s3])
            #expect(try await storage.entriesToReseal(.notUnder("k3"), after: nil, limit: 2, now: contract.now).map(\.id) == [s1, s2])
            #expect(try await storage.entriesToReseal(.notUnder("k3"), after: s2, limit: 2, now: contract.now).map(\.id) == [s3])
            #expect(try await storage.entriesToReseal(.notUnder("k3"), after: s3, limit: 2, now: contract.now).isEmpty)
            #expect(try await storage.entriesToReseal(.clear, after: c1, limit: 10, now: contract.now).map(\.id) == [c2])
            #expect(try await storage.entriesToReseal(.clear, after: nil, limit: 0, now: contract.now).isEmpty)
            let read = try #require(try await storage.entriesToReseal(.notUnder("k2"), after: nil, limit: 1, now: contract.now).first)
            #expect(read.id == s1 && read.seal == seal("k1") && read.url.hasSuffix("/r-2") && read.headers == [StoredHeader(name: "X-Key", value: "r-2")])
            // Settled, the entry in flight is taken again.
            _ = try await contract.settle([Settlement(id: c3, transition: .deadLetter(.init(.rejected, status: 400, error: "HTTP 400")))])
            #expect(try await storage.entriesToReseal(.clear, after: nil, limit: 10, now: contract.now).map(\.id) == [c1, c2, c3])
        }
    }

    @Test("a re-seal replaces url, headers, body and seal in one call where the key is still the one read and the entry is not in flight", arguments: StoreKind.allCases)
    func reseal(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await insert(contract, [nil, seal("k1"), seal("k1"), seal("k2")], priorities: [0, 0, 9, 0])
            let (clear, underK1, held, underK2) = (ids[0], ids[1], ids[2], ids[3])
            #expect(try await contract.claim(limit: 1).claimed.map(\.id) == [held])
            let storage = contract.storage
            #expect(try await storage.reseal([]).isEmpty)
            let file = try await storage.storeBody(ByteStream(data: Data(repeating: 9, count: 300_000)))
            let sealedHeaders = [StoredHeader(name: "X-Sealed", value: "1")]
            let applied = try await storage.reseal([
                ResealUpdate(id: clear, expectedKeyID: nil, url: "https://example.test", headers: [], body: .inline(Data("sealed".utf8)), seal: seal("k3")),
                ResealUpdate(id: underK1, expectedKeyID: "k2", url: "https://wrong.test", headers: [], body: nil, seal: seal("k3")),
                ResealUpdate(id: held, expectedKeyID: "k1", url: "https://wrong.test", headers: [], body: nil, seal: seal("k3")),
                ResealUpdate(id: underK2, expectedKeyID: "k2", url: "https://example.test/opened", headers: sealedHeaders, body: file, seal: nil),
                ResealUpdate(id: 999_999, expectedKeyID: nil, url: "https://wrong.test", headers: [], body: nil, seal: nil),
            ])
            #expect(applied == [clear, underK2])
            let now = contract.now
            let resealed = try #require(try await storage.entry(clear, now: now))
            #expect(resealed.url == "https://example.test" && resealed.headers.isEmpty)
            #expect(resealed.body == .inline(Data("sealed".utf8)) && resealed.seal == seal("k3"))
            let opened = try #require(try await storage.entry(underK2, now: now))
            #expect(opened.url == "https://example.test/opened" && opened.headers == sealedHeaders)
            #expect(opened.body == file && opened.seal == nil)
            #expect(try await storage.replayBody(try #require(opened.body)).collect(upTo: 1 << 20) == Data(repeating: 9, count: 300_000))
            let untouched = try #require(try await storage.entry(underK1, now: now))
            #expect(untouched.seal == seal("k1") && untouched.url.hasSuffix("/r-2"), "another key was expected: nothing changed")
            let inFlight = try #require(try await storage.entry(held, now: now))
            #expect(inFlight.seal == seal("k1") && inFlight.url.hasSuffix("/r-3") && inFlight.state == .inflight, "in flight: nothing changed")
            #expect(try await storage.sealCatalog().entries == [nil: 1, "k1": 2, "k3": 1])
            // Given back, it is re-sealed; a body taken away leaves none.
            _ = try await contract.settle([Settlement(id: held, transition: .release)])
            #expect(try await storage.reseal([
                ResealUpdate(id: held, expectedKeyID: "k1", url: "https://example.test", headers: [], body: nil, seal: seal("k3")),
            ]) == [held])
            let released = try #require(try await storage.entry(held, now: now))
            #expect(released.seal == seal("k3") && released.body == nil && released.url == "https://example.test")
            #expect(try await storage.sealCatalog().entries == [nil: 1, "k1": 1, "k3": 2])
            #expect(try await storage.integrityCheck() == ["ok"])
        }
    }
}

// MARK: - Support

/// A seal under `key` whose blob names it.
private func seal(_ key: String) -> StoredSeal {
    StoredSeal(keyID: key, blob: Data("sealed under \(key)".utf8) + Data([0, 1, 2]))
}

/// Inserts one entry per seal (`nil`: in clear) in one call, keys `r-<n>` (once per test),
/// priorities as given (0 otherwise); returns the ids.
private func insert(_ contract: Contract, _ seals: [StoredSeal?], priorities: [Int] = []) async throws -> [EntryID] {
    let entries = seals.enumerated().map { index, seal in
        var entry = Spec(priority: index < priorities.count ? priorities[index] : 0).entry(key: "r-\(index + 1)")
        entry.seal = seal
        return entry
    }
    let tickets = try await contract.storage.insert(entries, now: contract.now)
    #expect(tickets.allSatisfy { !$0.deduplicated })
    return tickets.map(\.id)
}
