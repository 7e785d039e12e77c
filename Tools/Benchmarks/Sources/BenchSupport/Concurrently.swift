import Foundation

/// Calls `body` for indexes `0..<count` from `tasks` tasks, each taking the next index when it
/// is done with one (as a drain at that concurrency sends).
public func concurrently(_ count: Int, tasks: Int = 16, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    let next = IndexDispenser()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                while let index = next.take(below: count) { try await body(index) }
            }
        }
        try await group.waitForAll()
    }
}

/// Hands out indexes to workers.
public final class IndexDispenser: @unchecked Sendable {
    // Every access to `next` holds the lock.
    private let lock = NSLock()
    private var next = 0

    public init() {}

    public func take(below limit: Int) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard next < limit else { return nil }
        next += 1
        return next - 1
    }
}
