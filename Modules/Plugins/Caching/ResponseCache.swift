public import Foundation
public import HTTPTypes
import HTTPCore

/// An in-memory store of responses with a byte bound, evicting the least recently used.
///
/// Safe to share between tasks; every operation takes one lock. Share one cache between
/// interceptors to share entries.
public final class ResponseCache: Sendable {
    /// A stored response.
    public struct Entry: Sendable {
        /// The response's status: 200, the only status stored.
        public var status: HTTPResponse.Status
        /// The response's header fields, updated by each revalidation.
        public var headers: HTTPFields
        /// The whole response body.
        public var body: Data
        /// When the response (or its last revalidation) arrived.
        public var storedAt: Date
        /// The request field values named by the response's `Vary`, to match later requests.
        public var varyValues: [String: String]
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var bytes = 0
    }

    /// The most body bytes kept in all.
    public let maxBytes: Int
    private let state = LockedBox(State())

    /// An empty cache that keeps at most `maxBytes` body bytes in all (10 MiB unless given).
    public init(maxBytes: Int = 10 * 1024 * 1024) {
        self.maxBytes = maxBytes
    }

    /// The body bytes held now.
    public var byteCount: Int { state.withLock { $0.bytes } }

    /// The number of entries.
    public var count: Int { state.withLock { $0.entries.count } }

    func entry(for key: String) -> Entry? {
        state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            state.order.removeAll { $0 == key }
            state.order.append(key)
            return entry
        }
    }

    func store(_ entry: Entry, for key: String) {
        guard entry.body.count <= maxBytes else { return }
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) {
                state.bytes -= old.body.count
                state.order.removeAll { $0 == key }
            }
            state.entries[key] = entry
            state.order.append(key)
            state.bytes += entry.body.count
            while state.bytes > maxBytes, let oldest = state.order.first {
                state.order.removeFirst()
                if let evicted = state.entries.removeValue(forKey: oldest) { state.bytes -= evicted.body.count }
            }
        }
    }

    /// Forgets the response for `key`.
    func remove(_ key: String) {
        state.withLock { state in
            if let old = state.entries.removeValue(forKey: key) {
                state.bytes -= old.body.count
                state.order.removeAll { $0 == key }
            }
        }
    }

    /// Forgets everything.
    public func removeAll() {
        state.withLock { $0 = State() }
    }
}
