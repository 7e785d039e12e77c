import Foundation
import HTTPCore
@testable import OfflineQueueCore
import Testing

/// The seal gate counts a queue's entries (a read of every one: 11 to 13 s at 10,000,000 on
/// SQLite, at each drainer's start) only when a check needs the counts. Entries are sealed only
/// under key ids the queue recorded, so a queue that recorded none, or whose keyring holds
/// every key it recorded, is checked from its key checks alone.
@Suite("The seal gate reads the entries only when a check needs them")
struct SealGateCountTests {
    /// A sealing store of key checks and counts, which notes each counting read.
    final class CountingSealStore: QueueSealStorage {
        private let state: LockedBox<(keyChecks: [String: String], entries: [String?: Int], counted: Int)>

        init(keyChecks: [String: String] = [:], entries: [String?: Int] = [:]) {
            state = LockedBox((keyChecks, entries, 0))
        }

        /// How many reads counted the entries.
        var counted: Int { state.current.counted }
        var keyChecks: [String: String] { state.current.keyChecks }

        func sealCatalog(countingEntries: Bool, recording check: KeyCheck?) async throws(QueueError) -> SealCatalog {
            state.withLock { state in
                if let check, state.keyChecks[check.keyID] == nil { state.keyChecks[check.keyID] = check.value }
                if countingEntries { state.counted += 1 }
                return SealCatalog(queueID: UUID(uuid: UUID.zero), keyChecks: state.keyChecks, entries: countingEntries ? state.entries : [:])
            }
        }

        func reseal(_ updates: [ResealUpdate]) async throws(QueueError) -> Set<EntryID> { [] }
    }

    /// Keys by id with their check values; the gate asks for nothing else.
    struct KeysOnly: EntrySealer {
        var keys: [String: String]
        var primary: String

        var primaryKey: (id: String, checkValue: String) { (primary, keys[primary] ?? "") }
        func keyCheckValue(ofKey id: String) -> String? { keys[id] }
        func seal(
            _ entry: inout NewEntry, body: RequestBody?, inlineLimit: Int, queueID: UUID, store: any QueueEnqueueStorage
        ) async throws(QueueError) -> StoredBody? {
            throw .keyUnavailable("the gate's tests seal nothing")
        }
        func open(_ entry: QueueEntry, seal: StoredSeal, queueID: UUID) -> Result<OpenedEntry, QueueError> {
            .failure(.keyUnavailable("the gate's tests open nothing"))
        }
        func sealResponse(_ plaintext: Data, of entry: QueueEntry, queueID: UUID) -> StoredResponse {
            Issue.record("the gate seals no response")
            return StoredResponse(bytes: plaintext, keyID: nil)
        }
        func openResponse(_ stored: StoredResponse, of entry: QueueEntry, queueID: UUID) -> Result<Data, QueueError> {
            .failure(.keyUnavailable("the gate's tests open nothing"))
        }
    }

    @Test("no keyring, no key recorded: a drain's gate passes without reading an entry; an enqueue's does not look")
    func neverSealed() async throws {
        let store = CountingSealStore(entries: [nil: 10_000_000])
        _ = try await SealGate().sealing(.off, store: store, forDrain: true)
        _ = try await SealGate().sealing(.off, store: store, forDrain: false)
        #expect(store.counted == 0)
    }

    @Test("no keyring, a key recorded: the entries are counted, and those sealed under it refuse the drain by number")
    func recordedKeyNoKeyring() async throws {
        let store = CountingSealStore(keyChecks: ["k1": "c1"], entries: ["k1": 3, nil: 5])
        await #expect { _ = try await SealGate().sealing(.off, store: store, forDrain: true) } throws: { error in
            "\(error)".contains("3 entries are sealed under key k1, but no keyring was given")
        }
        #expect(store.counted == 1)
        // Every entry under it re-sealed or gone: counted again, and passed.
        let emptied = CountingSealStore(keyChecks: ["k1": "c1"], entries: [nil: 5])
        _ = try await SealGate().sealing(.off, store: emptied, forDrain: true)
        #expect(emptied.counted == 1)
    }

    @Test("a keyring holding every key recorded: sealing on, drain and enqueue pass without reading an entry")
    func keyringHoldsEveryKey() async throws {
        let sealer = KeysOnly(keys: ["k1": "c1", "k2": "c2"], primary: "k2")
        let store = CountingSealStore(keyChecks: ["k1": "c1"], entries: ["k1": 7, nil: 2])
        _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: true)
        _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: false)
        #expect(store.counted == 0)
        #expect(store.keyChecks == ["k1": "c1", "k2": "c2"], "the primary key's check recorded before anything is sealed under it")
        // A keyring only to read (sealing off) holds them too.
        let reading = CountingSealStore(keyChecks: ["k1": "c1"], entries: ["k1": 7])
        _ = try await SealGate().sealing(QueueSealing(mode: .off, sealer: sealer), store: reading, forDrain: true)
        #expect(reading.counted == 0)
    }

    @Test("a key recorded that the keyring lacks: a drain counts, and refuses while entries are under it; an enqueue does not count")
    func keyringLacksARecordedKey() async throws {
        let sealer = KeysOnly(keys: ["k2": "c2"], primary: "k2")
        let store = CountingSealStore(keyChecks: ["k1": "c1", "k2": "c2"], entries: ["k1": 2, "k2": 4])
        await #expect { _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: true) } throws: { error in
            "\(error)".contains("2 entries are sealed under key k1, which the keyring does not hold")
        }
        #expect(store.counted == 1)
        _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: false)
        #expect(store.counted == 1, "an enqueue opens nothing: the keys it lacks do not matter to it")
        // The old key retired after a rotation left nothing under it: counted, and passed.
        let rotated = CountingSealStore(keyChecks: ["k1": "c1", "k2": "c2"], entries: ["k2": 6])
        _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: rotated, forDrain: true)
        #expect(rotated.counted == 1)
    }

    @Test("other bytes under a key id the queue recorded: refused, the entries under it counted for the message")
    func differentKeyUnderRecordedID() async throws {
        let sealer = KeysOnly(keys: ["k1": "other"], primary: "k1")
        let store = CountingSealStore(keyChecks: ["k1": "c1"], entries: ["k1": 9])
        await #expect { _ = try await SealGate().sealing(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: false) } throws: { error in
            "\(error)".contains("its key-check value differs); 9 entries are sealed under it")
        }
        #expect(store.counted == 1)
    }

    @Test("sealing required: the entries in clear are counted (every time), and refused")
    func requiredCountsClear() async throws {
        let sealer = KeysOnly(keys: ["k1": "c1"], primary: "k1")
        let store = CountingSealStore(entries: [nil: 4])
        await #expect { _ = try await SealGate().sealing(QueueSealing(mode: .required, sealer: sealer), store: store, forDrain: false) } throws: { error in
            "\(error)".contains("sealing is required, but 4 entries are stored in clear")
        }
        #expect(store.counted == 1)
        let sealed = CountingSealStore(keyChecks: ["k1": "c1"], entries: ["k1": 4])
        _ = try await SealGate().sealing(QueueSealing(mode: .required, sealer: sealer), store: sealed, forDrain: true)
        #expect(sealed.counted == 1)
    }
}
