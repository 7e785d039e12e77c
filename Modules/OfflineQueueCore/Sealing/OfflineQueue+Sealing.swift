public import Foundation
import HTTPCore

extension QueueSealing {
    /// What a queue holds sealed, by key (`sync keys status`).
    public struct Status: Sendable, Hashable, Codable {
        /// The queue's id, bound into every value it seals.
        public var queueID: UUID
        /// Entries stored in clear.
        public var clear: Int
        /// Entries sealed, by key id.
        public var sealed: [String: Int]
        /// The key-check value the queue recorded for each key id it sealed with.
        public var keyChecks: [String: String]

        /// The status of the queue `queueID`: `clear` entries in clear, and the entries and key-check
        /// values by key id.
        public init(queueID: UUID, clear: Int, sealed: [String: Int], keyChecks: [String: String]) {
            self.queueID = queueID
            self.clear = clear
            self.sealed = sealed
            self.keyChecks = keyChecks
        }
    }
}

extension QueueSealing {
    /// Which entries a re-sealing (QueueEncryption's `OfflineQueue.reseal(_:keyring:batchSize:)`) seals again.
    public enum ResealScope: String, Sendable, Hashable, CaseIterable {
        /// Entries sealed under a key other than the keyring's primary (`sync keys rotate`).
        case otherKeys
        /// Entries stored in clear (`sync keys encrypt`).
        case clear
    }
}

extension QueueSealing {
    /// What a re-sealing did.
    public struct ResealSummary: Sendable, Hashable, Codable {
        /// Entries now sealed under the primary key.
        public var resealed = 0
        /// Entries left for a later run: claimed by a drainer while they were read, or changed
        /// by another re-sealing.
        public var skipped = 0
        /// The batches committed, each one transaction.
        public var batches = 0

        /// A summary with the counts given; every count zero by default.
        public init(resealed: Int = 0, skipped: Int = 0, batches: Int = 0) {
            self.resealed = resealed
            self.skipped = skipped
            self.batches = batches
        }
    }
}

extension OfflineQueue {
    /// How many entries are sealed under each key id and how many are in clear. Needs no key.
    public func sealStatus() async throws(QueueError) -> QueueSealing.Status {
        let catalog = try await resealer.store.sealCatalog()
        var sealed: [String: Int] = [:]
        for case let (key?, count) in catalog.entries { sealed[key] = count }
        return QueueSealing.Status(queueID: catalog.queueID, clear: catalog.clear, sealed: sealed, keyChecks: catalog.keyChecks)
    }

    /// Seals the entries `scope` picks again under `sealer`'s primary key, in batches of
    /// `batchSize`, each one transaction (QueueEncryption's `reseal(_:keyring:batchSize:)`
    /// says what it guarantees).
    package func reseal(_ scope: QueueSealing.ResealScope, sealer: any EntrySealer, batchSize: Int) async throws(QueueError) -> QueueSealing.ResealSummary {
        try await resealer.reseal(scope, sealer: sealer, batchSize: batchSize)
    }
}
