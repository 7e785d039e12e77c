import Foundation
import HTTPCore

/// The check of a queue's keys against what it stores, made once per queue before its first
/// enqueue or drain touches an entry (``QueueSealing``): the keys its entries need are in the
/// keyring, with the bytes the queue recorded for them.
///
/// Entries are sealed only under key ids the queue recorded: whatever seals (an enqueue, a
/// re-sealing) passes ``checked(_:store:forDrain:)`` first, which records the primary key's
/// check before the first entry is sealed under it. So the entries are counted (a read of
/// every one, 11 to 13 s at 10,000,000 on SQLite) only when a check needs them: sealing
/// required (entries in clear), a recorded key the keyring lacks (entries still under it), or
/// an error to word. A queue that never sealed, or whose keyring holds every key it recorded,
/// is checked from its key checks alone.
final class SealGate: Sendable {
    private struct Checked {
        var sealing: EntrySealing
        var forDrain: Bool
    }

    private let checked = LockedBox<Checked?>(nil)

    /// The sealing `settings` give, checked against what `store` holds for an enqueue, or for a
    /// drain (which must open every entry, so every key id in use must be in the keyring).
    ///
    /// - Throws: ``QueueError/Kind/keyUnavailable`` naming the key id and how many entries it
    ///   seals; nothing is changed.
    func sealing(_ settings: QueueSealing, store: any QueueSealStorage, forDrain: Bool) async throws(QueueError) -> EntrySealing {
        if let known = checked.current, known.forDrain || !forDrain { return known.sealing }
        // A queue that neither seals nor holds a keyring enqueues in clear without a look; its
        // drain first makes sure that no entry needs a key it does not have.
        guard settings.mode != .off || settings.sealer != nil else {
            // No key recorded: nothing is sealed, and no entry is read.
            if forDrain, try await !store.sealCatalog(countingEntries: false).keyChecks.isEmpty {
                let catalog = try await store.sealCatalog(countingEntries: true)
                if let (key, count) = catalog.entries.compactMap({ key, count in key.map { ($0, count) } }).min(by: { $0.0 < $1.0 }) {
                    throw .keyUnavailable("\(Self.count(count)) sealed under key \(key), but no keyring was given")
                }
            }
            let sealing = EntrySealing(queueID: UUID(), sealer: nil, mode: .off)
            checked.withLock { $0 = Checked(sealing: sealing, forDrain: forDrain) }
            return sealing
        }
        let sealing = try await Self.checked(settings, store: store, forDrain: forDrain)
        checked.withLock { current in
            if current == nil || forDrain { current = Checked(sealing: sealing, forDrain: forDrain) }
        }
        return sealing
    }

    /// "1 entry is", "3 entries are".
    private static func count(_ n: Int) -> String { n == 1 ? "1 entry is" : "\(n) entries are" }

    /// The sealing `settings` give, checked against what `store` holds.
    static func checked(_ settings: QueueSealing, store: any QueueSealStorage, forDrain: Bool) async throws(QueueError) -> EntrySealing {
        var catalog = try await store.sealCatalog(countingEntries: false)
        // The entries, counted where a check below reads them (see the type's comment).
        let sealer = settings.sealer
        let differs = catalog.keyChecks.contains { id, check in sealer?.keyCheckValue(ofKey: id).map { $0 != check } ?? false }
        let lacking = forDrain && catalog.keyChecks.keys.contains { sealer?.keyCheckValue(ofKey: $0) == nil }
        if settings.mode == .required || differs || (sealer != nil && lacking) {
            catalog = try await store.sealCatalog(countingEntries: true)
        }
        if settings.mode == .required, catalog.clear > 0 {
            throw .keyUnavailable(
                "sealing is required, but \(count(catalog.clear)) stored in clear: seal them first with `sync keys encrypt`"
            )
        }
        guard let sealer = settings.sealer else {
            throw .keyUnavailable("sealing is \(settings.mode), but no keyring was given")
        }
        // Other bytes under a key id the queue knows: refused whether or not entries use it.
        for (id, checkValue) in catalog.keyChecks.sorted(by: { $0.key < $1.key }) {
            guard let held = sealer.keyCheckValue(ofKey: id) else { continue }
            if held != checkValue {
                let entries = catalog.entries[id] ?? 0
                throw .keyUnavailable(
                    "key \(id) in the keyring is not the key this queue recorded under that id (its key-check value differs); \(count(entries)) sealed under it"
                )
            }
        }
        if forDrain {
            for case let (id?, entries) in catalog.entries.sorted(by: { ($0.key ?? "") < ($1.key ?? "") }) where entries > 0 {
                guard sealer.keyCheckValue(ofKey: id) != nil else {
                    throw .keyUnavailable("\(count(entries)) sealed under key \(id), which the keyring does not hold")
                }
            }
        }
        if settings.mode != .off {
            let primary = sealer.primaryKey
            let recorded = try await store.recordKeyCheck(keyID: primary.id, checkValue: primary.checkValue)
            if recorded != primary.checkValue {
                throw .keyUnavailable(
                    "key \(primary.id) in the keyring is not the key this queue recorded under that id (its key-check value differs)"
                )
            }
        }
        return EntrySealing(queueID: catalog.queueID, sealer: sealer, mode: settings.mode)
    }
}
