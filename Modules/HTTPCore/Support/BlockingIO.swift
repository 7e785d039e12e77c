import Dispatch
import Synchronization

/// Runs work that blocks its thread — a file's open, read, write or `fsync` — on a thread of
/// its own, never on the cooperative pool.
///
/// The pool has as many threads as the machine has cores (two on a small server): a read from
/// a cold disk, or an `fsync` of a large body file, held on one of them stalls every other task
/// of the process for as long. Here the work runs on one of a few serial Dispatch queues, which
/// run on Dispatch's overcommit threads (made as needed), not on the width-limited global queue
/// that Swift's pool uses on Linux (`DispatchQueue.global()` would take a pool thread).
///
/// Each call costs a hop there and back (a continuation and a Dispatch block): callers batch,
/// as ``ByteStream``'s file reader does (about 1 MiB per hop).
package enum BlockingIO {
    /// Four queues: a slow disk holds one stream's work without queueing every other stream's
    /// behind it, and at most four threads block at once.
    private static let queues = (0..<4).map { DispatchQueue(label: "courier.blocking-io.\($0)") }
    private static let next = Atomic<Int>(0)

    /// `work`'s result, computed on a blocking-work queue; what it throws is rethrown here.
    package static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue & 3
        // Unchecked: the block resumes it exactly once, and a checked one costs an allocation
        // more per hop.
        let result: Result<T, E> = await withUnsafeContinuation { continuation in
            queues[index].async { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }
        }
        return try result.get()
    }
}
