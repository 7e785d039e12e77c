/// Claimed entries not started, the first claimed first. Taking from the front shifts nothing:
/// `Array.removeFirst` moved every entry left at every start (at concurrency 64, up to 127
/// entries of a few hundred bytes each per send, the larger part of `DrainMachine.next`'s
/// cost in a profile of a drain at 64 HTTP/2 streams). A taken entry's slot is emptied at once,
/// so its body is not held; the emptied front is dropped when a claim adds entries.
struct ReadyEntries {
    private var slots: [QueueEntry?] = []
    private var head = 0
    /// The entries in hand (slots from `head` on, less the holes `take(_:admitting:)` left).
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds a claim's entries after those in hand.
    mutating func append(contentsOf entries: [QueueEntry]) {
        if head > 0 {
            slots.removeFirst(head)
            head = 0
        }
        slots.reserveCapacity(slots.count + entries.count)
        for entry in entries { slots.append(entry) }
        count += entries.count
    }

    /// The first `limit` entries (fewer when fewer are in hand), taken.
    mutating func takeFirst(_ limit: Int) -> [QueueEntry] {
        take(limit) { _ in true }
    }

    /// Up to `limit` entries `admit` lets go, in order (it is asked of each in turn until
    /// `limit` are taken), taken; the others stay, in order.
    mutating func take(_ limit: Int, admitting admit: (QueueEntry) -> Bool) -> [QueueEntry] {
        var taken: [QueueEntry] = []
        let wanted = max(0, min(limit, count))
        guard wanted > 0 else { return taken }
        taken.reserveCapacity(wanted)
        var index = head
        while index < slots.count && taken.count < wanted {
            if let entry = slots[index], admit(entry) {
                taken.append(entry)
                slots[index] = nil
            }
            index += 1
        }
        count -= taken.count
        // The emptied front is dropped; a hole further on is skipped by every later walk.
        while head < slots.count, slots[head] == nil { head += 1 }
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        }
        return taken
    }

    /// Takes the entries `predicate` picks, in order; the others stay, in order.
    mutating func removeAll(where predicate: (QueueEntry) -> Bool) -> [QueueEntry] {
        var taken: [QueueEntry] = []
        var kept: [QueueEntry?] = []
        for case let entry? in slots[head...] {
            if predicate(entry) { taken.append(entry) } else { kept.append(entry) }
        }
        slots = kept
        head = 0
        count = kept.count
        return taken
    }
}
