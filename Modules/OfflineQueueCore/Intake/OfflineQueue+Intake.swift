import Foundation
import HTTPCore

/// The one way into the queue. Every entrance (``OfflineQueue/enqueue(_:)`` and the forms that
/// call it, ``OfflineQueue/send(_:options:)`` when it stores, the OpenAPI queue, `sync enqueue`,
/// the PostgreSQL outbox) admits its requests through ``OfflineQueue/admit(_:into:announcing:)``,
/// and a re-sealing writes its bodies through ``EntrySealing/storeBody(of:_:inlineLimit:into:)``:
/// a rule added here reaches them all. Only where the rows go differs: the store's own
/// transaction, or a caller's (``QueueEnqueueStorage`` is the destination either way).
extension OfflineQueue {
    /// Validates `requests` (which captures each one's trace context), seals them or stores
    /// their bodies as they are, inserts them into `destination` in one transaction, and counts
    /// them. With `announcing`, the entries are there for everyone at once: an `enqueued`
    /// event each and a wake-up of this process's drainers. A caller's transaction (the outbox)
    /// announces nothing: its entries exist only once it commits, and the store wakes the
    /// drainers then.
    ///
    /// All or none: when any step fails, the bodies stored for these entries are discarded
    /// and nothing is inserted.
    package func admit(
        _ requests: [QueuedRequest], into destination: any QueueEnqueueStorage, announcing: Bool
    ) async throws(QueueError) -> [Ticket] {
        var entries: [NewEntry] = []
        entries.reserveCapacity(requests.count)
        var files: [StoredBody] = []
        do {
            let sealing = try await sealGate.sealing(configuration.sealing, store: sealStore, forDrain: false)
            for request in requests {
                var entry = try validate(request)
                entry.body = try await sealing.storeBody(of: &entry, request.body, inlineLimit: configuration.inlineBodyLimit, into: destination)
                if let stored = entry.body, case .file = stored { files.append(stored) }
                entries.append(entry)
            }
            let tickets = try await destination.insert(entries, now: configuration.clock.now())
            // A deduplicated entry's new body is not referenced by any entry.
            let unused = zip(tickets, entries).compactMap { ticket, entry in ticket.deduplicated ? entry.body : nil }
            let unusedFiles = unused.filter { if case .file = $0 { true } else { false } }
            if !unusedFiles.isEmpty { await destination.discardBodies(unusedFiles) }
            metrics.enqueued(zip(tickets, entries).lazy.filter { !$0.0.deduplicated }.map(\.1.name))
            if announcing {
                for ticket in tickets where !ticket.deduplicated { broadcast.publish(.enqueued(ticket)) }
                enqueued.fire()
            }
            return tickets
        } catch {
            await destination.discardBodies(files)
            throw error
        }
    }

    /// A conflict resolver's request (``QueueConflict/Resolution/send(_:)``) prepared for `entry`'s
    /// place as an enqueue prepares one (validated, sealed when the queue seals, its body
    /// stored), with the entry's group and priority; its own links and coalescing key are not
    /// read (the entry keeps its own).
    package func prepareReplacement(_ request: QueuedRequest, for entry: QueueEntry) async throws(QueueError) -> NewEntry {
        var request = request
        request.options.after = []
        request.options.coalescingKey = nil
        request.options.group = entry.group
        request.options.priority = entry.priority
        let sealing = try await sealGate.sealing(configuration.sealing, store: sealStore, forDrain: false)
        var new = try validate(request)
        new.body = try await sealing.storeBody(of: &new, request.body, inlineLimit: configuration.inlineBodyLimit, into: enqueueStore)
        return new
    }
}
