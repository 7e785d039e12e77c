import Foundation

/// A value behind a lock, shared between tasks.
///
/// `@unchecked Sendable` is sound here: `value` is only reached through `withLock`, which holds
/// `lock` for the whole access, so no two threads touch it at once.
package final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    package var current: Value { withLock { $0 } }
}
