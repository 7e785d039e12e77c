public import Foundation
import HTTPCore

/// What a queue holds sealed, by key (`sync keys status`).
public struct SealStatus: Sendable, Hashable, Codable {
    /// The queue's id, bound into every value it seals.
    public var queueID: UUID
    /// Entries stored in clear.
    public var clear: Int
    /// Entries sealed, by key id.
    public var sealed: [String: Int]
    /// The key-check value the queue recorded for each key id it sealed with.
    public var keyChecks: [String: String]

    public init(queueID: UUID, clear: Int, sealed: [String: Int], keyChecks: [String: String]) {
        self.queueID = queueID
        self.clear = clear
        self.sealed = sealed
        self.keyChecks = keyChecks
    }
}

/// Which entries a re-sealing (QueueEncryption's `OfflineQueue.reseal(_:keyring:batchSize:)`) seals again.
public enum ResealScope: String, Sendable, Hashable, CaseIterable {
    /// Entries sealed under a key other than the keyring's primary (`sync keys rotate`).
    case otherKeys
    /// Entries stored in clear (`sync keys encrypt`).
    case clear
}

/// What a re-sealing did.
public struct ResealSummary: Sendable, Hashable, Codable {
    /// Entries now sealed under the primary key.
    public var resealed = 0
    /// Entries left for a later run: claimed by a drainer while they were read, or changed
    /// by another re-sealing.
    public var skipped = 0
    /// The batches committed, each one transaction.
    public var batches = 0

    public init(resealed: Int = 0, skipped: Int = 0, batches: Int = 0) {
        self.resealed = resealed
        self.skipped = skipped
        self.batches = batches
    }
}

extension OfflineQueue {
    /// How many entries are sealed under each key id and how many are in clear. Needs no key.
    public func sealStatus() async throws(QueueError) -> SealStatus {
        let catalog = try await sealStore.sealCatalog()
        var sealed: [String: Int] = [:]
        for case let (key?, count) in catalog.entries { sealed[key] = count }
        return SealStatus(queueID: catalog.queueID, clear: catalog.clear, sealed: sealed, keyChecks: catalog.keyChecks)
    }

    /// Seals the entries `scope` picks again under `sealer`'s primary key, in batches of
    /// `batchSize`, each one transaction (QueueEncryption's `reseal(_:keyring:batchSize:)`
    /// says what it guarantees).
    package func reseal(_ scope: ResealScope, sealer: any EntrySealer, batchSize: Int) async throws(QueueError) -> ResealSummary {
        let sealing = try await SealGate.checked(QueueSealing(mode: .on, sealer: sealer), store: sealStore, forDrain: true)
        let primary = sealer.primaryKey.id
        let selection: ResealSelection = scope == .clear ? .clear : .notUnder(primary)
        var summary = ResealSummary()
        var after: EntryID?
        while true {
            let batch = try await sealStore.entriesToReseal(selection, after: after, limit: max(1, batchSize))
            guard let last = batch.last else { return summary }
            after = last.id
            var updates: [ResealUpdate] = []
            var newBodies: [EntryID: StoredBody] = [:]
            do throws(QueueError) {
                for entry in batch {
                    let update = try await resealed(entry, sealing: sealing)
                    if let body = update.body, case .file = body { newBodies[entry.id] = body }
                    updates.append(update)
                }
            } catch {
                await enqueueStore.discardBodies(Array(newBodies.values))
                throw error
            }
            let applied: Set<EntryID>
            do throws(QueueError) {
                applied = try await sealStore.reseal(updates)
            } catch {
                await enqueueStore.discardBodies(Array(newBodies.values))
                throw error
            }
            summary.batches += 1
            summary.resealed += applied.count
            summary.skipped += batch.count - applied.count
            // The bodies no row points at any more: the old ones of entries re-sealed, the new
            // ones of entries left alone.
            var unused = batch.filter { applied.contains($0.id) }.compactMap { entry in entry.body.flatMap { if case .file = $0 { $0 } else { nil } } }
            unused += newBodies.filter { !applied.contains($0.key) }.map(\.value)
            if !unused.isEmpty { await enqueueStore.discardBodies(unused) }
        }
    }

    /// `entry` opened and sealed again under the primary key: its new url, headers, seal and
    /// body (a body kept apart is written anew).
    private func resealed(_ entry: QueueEntry, sealing: EntrySealing) async throws(QueueError) -> ResealUpdate {
        // A body is verified in full first, so a failure while it is copied is the disk's.
        let kept = try entry.body.map { body throws(QueueError) in try drainStore.replayBody(body) }
        let (opened, body, _) = try await sealing.open(entry, stored: kept, memory: nil)
        var new = NewEntry(
            idempotencyKey: entry.idempotencyKey, method: entry.method, url: opened.url, headers: opened.headers, body: nil,
            scopes: entry.scopes, name: entry.name, group: entry.group, priority: entry.priority, timeout: entry.timeout, notBefore: nil
        )
        let stored = try await storeBody(of: &new, body, sealing: sealing, into: enqueueStore)
        return ResealUpdate(id: entry.id, expectedKeyID: entry.seal?.keyID, url: new.url, headers: new.headers, body: stored, seal: new.seal)
    }
}
