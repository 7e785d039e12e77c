package import Foundation

/// A value behind a lock, shared between tasks.
///
/// `@unchecked Sendable` is sound here: `value` is only reached through `withLock`, which holds
/// `lock` for the whole access, so no two threads touch it at once.
///
/// `@inlinable`, so that callers in other modules (plugins, the queue) get a specialised
/// `withLock` instead of a generic call that looks up metadata for `Value` and `Result`.
package final class LockedBox<Value>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    @inlinable package init(_ value: Value) { self.value = value }

    @inlinable package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    @inlinable package var current: Value { withLock { $0 } }
}
