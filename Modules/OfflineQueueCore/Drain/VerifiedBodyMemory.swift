import HTTPCore

/// The memory a queue's sends may hold as verified plaintext of sealed bodies
/// (``QueueSealing/verifiedBodyMemory``): a body that fits in what is left is opened once, its
/// verification keeping the plaintext for the send; one that does not is read and opened again
/// as it is sent.
///
/// ```swift
/// if let hold = memory.reserve(size) {
///     let plaintext = try await cipher.openBody(stream, expectedSize: size)
///     // send `plaintext`, keeping `hold` alive until the send is over
/// }
/// ```
package final class VerifiedBodyMemory: Sendable {
    package let limit: Int
    private let used = LockedBox(0)

    package init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// How many bytes are held now, for tests.
    package var held: Int { used.current }

    /// `size` bytes of the budget until the returned hold is released (or dropped), or `nil`
    /// when they do not fit in what is left.
    package func reserve(_ size: Int) -> Hold? {
        guard size >= 0, size <= limit else { return nil }
        let granted = used.withLock { used -> Bool in
            guard used + size <= limit else { return false }
            used += size
            return true
        }
        return granted ? Hold(memory: self, size: size) : nil
    }

    fileprivate func release(_ size: Int) {
        used.withLock { $0 -= size }
    }

    /// Bytes of the budget, given back when the hold goes away: kept by whoever holds the
    /// plaintext, so the count cannot outlive it, nor fall short of it on a path that throws.
    package final class Hold: Sendable {
        private let memory: VerifiedBodyMemory
        package let size: Int

        fileprivate init(memory: VerifiedBodyMemory, size: Int) {
            self.memory = memory
            self.size = size
        }

        deinit { memory.release(size) }
    }
}
