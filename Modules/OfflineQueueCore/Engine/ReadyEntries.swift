/// Claimed entries not started, the first claimed first. Taking from the front shifts nothing:
/// `Array.removeFirst` moved every entry left at every start (at concurrency 64, up to 127
/// entries of a few hundred bytes each per send, the larger part of `DrainMachine.next`'s
/// cost in a profile of a drain at 64 HTTP/2 streams). A taken entry's slot is emptied at once,
/// so its body is not held; the emptied front is dropped when a claim adds entries.
struct ReadyEntries {
    private var slots: [QueueEntry?] = []
    private var head = 0

    var isEmpty: Bool { head == slots.count }
    var count: Int { slots.count - head }

    /// Adds a claim's entries after those in hand.
    mutating func append(contentsOf entries: [QueueEntry]) {
        if head > 0 {
            slots.removeFirst(head)
            head = 0
        }
        slots.reserveCapacity(slots.count + entries.count)
        for entry in entries { slots.append(entry) }
    }

    /// The first `limit` entries (fewer when fewer are in hand), taken.
    mutating func takeFirst(_ limit: Int) -> [QueueEntry] {
        let end = head + max(0, min(limit, count))
        var taken: [QueueEntry] = []
        taken.reserveCapacity(end - head)
        for index in head..<end {
            if let entry = slots[index] { taken.append(entry) }
            slots[index] = nil
        }
        head = end
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
        return taken
    }
}
