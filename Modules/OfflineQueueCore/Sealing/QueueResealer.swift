import Foundation
import HTTPCore

/// The re-sealing's role (`sync keys rotate`, `sync keys encrypt`): reads the entries a scope
/// picks, opens each, seals it again under the primary key and writes it back, in batches. It
/// holds the store as the sealing sees it (``QueueSealStorage``), where new bodies go
/// (``QueueEnqueueStorage``) and how stored ones are read (``QueueBodyReading``), and nothing
/// else of the queue.
struct QueueResealer: Sendable {
    let store: any QueueSealStorage & QueueOperatorStorage
    let clock: QueueClock
    let bodies: any QueueEnqueueStorage
    let reader: any QueueBodyReading
    /// ``QueueConfiguration/inlineBodyLimit``: a re-sealed body is kept as an enqueue keeps it.
    let inlineLimit: Int

    /// Seals the entries `scope` picks again under `sealer`'s primary key, in batches of
    /// `batchSize`, each one transaction (QueueEncryption's `reseal(_:keyring:batchSize:)`
    /// says what it guarantees).
    func reseal(_ scope: QueueSealing.ResealScope, sealer: any EntrySealer, batchSize: Int) async throws(QueueError) -> QueueSealing.ResealSummary {
        let sealing = try await SealGate.checked(QueueSealing(mode: .on, sealer: sealer), store: store, forDrain: true)
        let primary = sealer.primaryKey.id
        let selection: ResealSelection = scope == .clear ? .clear : .notUnder(primary)
        var summary = QueueSealing.ResealSummary()
        var after: EntryID?
        while true {
            let batch = try await store.entriesToReseal(selection, after: after, limit: max(1, batchSize), now: clock.now())
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
                await bodies.discardBodies(Array(newBodies.values))
                throw error
            }
            let applied: Set<EntryID>
            do throws(QueueError) {
                applied = try await store.reseal(updates)
            } catch {
                await bodies.discardBodies(Array(newBodies.values))
                throw error
            }
            summary.batches += 1
            summary.resealed += applied.count
            summary.skipped += batch.count - applied.count
            // The bodies no row points at any more: the old ones of entries re-sealed, the new
            // ones of entries left alone.
            var unused = batch.filter { applied.contains($0.id) }.compactMap { entry in entry.body.flatMap { if case .file = $0 { $0 } else { nil } } }
            unused += newBodies.filter { !applied.contains($0.key) }.map(\.value)
            if !unused.isEmpty { await bodies.discardBodies(unused) }
        }
    }

    /// `entry` opened and sealed again under the primary key: its new url, headers, seal and
    /// body (a body kept apart is written anew).
    private func resealed(_ entry: QueueEntry, sealing: EntrySealing) async throws(QueueError) -> ResealUpdate {
        // A body is verified in full first, so a failure while it is copied is the disk's.
        let kept = try entry.body.map { body throws(QueueError) in try reader.replayBody(body) }
        let (opened, body, _) = try await sealing.open(entry, stored: kept, memory: nil)
        var new = NewEntry(
            idempotencyKey: entry.idempotencyKey, method: entry.method, url: opened.url, headers: opened.headers, body: nil,
            scopes: entry.scopes, name: entry.name, group: entry.group, priority: entry.priority, timeout: entry.timeout, notBefore: nil
        )
        let stored = try await sealing.storeBody(of: &new, body, inlineLimit: inlineLimit, into: bodies)
        return ResealUpdate(id: entry.id, expectedKeyID: entry.seal?.keyID, url: new.url, headers: new.headers, body: stored, seal: new.seal)
    }
}
