package import Foundation

/// The sealing role of the storage contract (``QueueStorage``): what a queue that seals its
/// entries at rest (``QueueSealing``) keeps besides the entries, and the re-sealing of entries
/// in place. Each entry's seal is two columns the store keeps as they are given
/// (``StoredSeal``): the key id in clear, and the sealed target and headers; its body is stored
/// sealed, as any body.
///
/// ```swift
/// let catalog = try await store.sealCatalog()          // the queue's id, its key checks, entries per key
/// let keys = try await store.sealCatalog(countingEntries: false)   // the id and key checks alone, no entry read
/// _ = try await store.sealCatalog(countingEntries: false, recording: KeyCheck(keyID: "3fa9c01e", value: check))
/// let batch = try await store.entriesToReseal(.notUnder("8b01d2aa"), after: nil, limit: 64, now: clock.now())
/// let applied = try await store.reseal(updates)        // one transaction; entries claimed meanwhile are skipped
/// ```
package protocol QueueSealStorage: Sendable {
    /// The queue's id (drawn once, when the store is created or first asked, and kept), the
    /// key-check value recorded for each key id, and, when `countingEntries`, how many entries
    /// there are under each key id and in clear (a read of every entry; without it
    /// ``SealCatalog/entries`` is empty and no entry is read). Reads only: it touches no entry.
    /// With `recording`, first records the primary key's check value for its id unless one
    /// is recorded already (the first writer wins, so two processes opening a new queue
    /// with different keyrings under one id cannot both succeed): the catalog's
    /// ``SealCatalog/keyChecks`` then holds the value recorded, which the caller compares
    /// with its own.
    func sealCatalog(countingEntries: Bool, recording: KeyCheck?) async throws(QueueError) -> SealCatalog
    /// Replaces the url, headers, body and seal of each entry in `updates`, in one transaction,
    /// where the entry still has the seal key it had when it was read (``ResealUpdate/expectedKeyID``)
    /// and is not in flight. Returns the ids replaced; for the others nothing changed.
    func reseal(_ updates: [ResealUpdate]) async throws(QueueError) -> Set<EntryID>
}

/// An entry's seal as a store keeps it: the id of the key that sealed it, in clear, and the
/// sealed target and headers with the format version and salt (``EntrySealing`` reads it).
package struct StoredSeal: Sendable, Hashable {
    package var keyID: String
    package var blob: Data

    package init(keyID: String, blob: Data) {
        self.keyID = keyID
        self.blob = blob
    }
}

extension QueueSealStorage {
    /// The whole catalog, entries counted.
    package func sealCatalog() async throws(QueueError) -> SealCatalog {
        try await sealCatalog(countingEntries: true, recording: nil)
    }

    /// The catalog, entries counted or not.
    package func sealCatalog(countingEntries: Bool) async throws(QueueError) -> SealCatalog {
        try await sealCatalog(countingEntries: countingEntries, recording: nil)
    }

    /// Records `checkValue` for `keyID` unless a value is recorded for it already; returns the
    /// value recorded, this one or the earlier one.
    package func recordKeyCheck(keyID: String, checkValue: String) async throws(QueueError) -> String {
        try await sealCatalog(countingEntries: false, recording: KeyCheck(keyID: keyID, value: checkValue)).keyChecks[keyID] ?? checkValue
    }
}

/// What ``QueueSealStorage/sealCatalog(countingEntries:)`` reads.
package struct SealCatalog: Sendable, Hashable {
    /// The queue's id, bound into every sealed value.
    package var queueID: UUID
    /// The key-check value recorded for each key id the queue has sealed with.
    package var keyChecks: [String: String]
    /// Entries per key id; entries in clear under `nil`. Empty when read without counting.
    package var entries: [String?: Int]

    package init(queueID: UUID, keyChecks: [String: String] = [:], entries: [String?: Int] = [:]) {
        self.queueID = queueID
        self.keyChecks = keyChecks
        self.entries = entries
    }

    /// Entries in clear.
    package var clear: Int { entries[nil] ?? 0 }
}

/// Which entries a re-sealing takes.
package enum ResealSelection: Sendable, Hashable {
    /// Entries in clear.
    case clear
    /// Sealed entries under any key but this one.
    case notUnder(String)
}

/// One entry's new url, headers, body and seal (``QueueSealStorage/reseal(_:)``).
package struct ResealUpdate: Sendable {
    package var id: EntryID
    /// The key id the entry had when it was read (`nil`: in clear).
    package var expectedKeyID: String?
    package var url: String
    package var headers: [StoredHeader]
    package var body: StoredBody?
    package var seal: StoredSeal?

    package init(id: EntryID, expectedKeyID: String?, url: String, headers: [StoredHeader], body: StoredBody?, seal: StoredSeal?) {
        self.id = id
        self.expectedKeyID = expectedKeyID
        self.url = url
        self.headers = headers
        self.body = body
        self.seal = seal
    }
}

/// A key's check value to record (``QueueSealStorage/sealCatalog(countingEntries:recording:)``).
package struct KeyCheck: Sendable, Hashable {
    package var keyID: String
    package var value: String

    package init(keyID: String, value: String) {
        self.keyID = keyID
        self.value = value
    }
}

extension QueueSealStorage where Self: QueueOperatorStorage {
    /// The next `limit` entries past `after` that `selection` picks for re-sealing, none in
    /// flight, oldest first: one ``QueueOperatorStorage/entries(_:now:)``.
    package func entriesToReseal(_ selection: ResealSelection, after: EntryID?, limit: Int, now: QueueTime) async throws(QueueError) -> [QueueEntry] {
        let states = Set(EntryState.allCases).subtracting([.inflight])
        return try await entries(EntryQuery(states: states, conditions: [.seal(selection)], after: after, limit: max(0, limit)), now: now).entries
    }
}
