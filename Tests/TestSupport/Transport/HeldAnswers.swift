public import HTTPCore
public import HTTPTypes

/// A responder for a ``CourierTesting/LoopbackServer`` that holds the answers to requests for
/// chosen paths until the test releases them, then answers through `inner` (a stub, say): a
/// send that must still be under way when the test does something else stays under way however
/// slow the machine is, where a fixed delay would run out on a loaded one.
///
/// ```swift
/// let answers = HeldAnswers(stub)
/// answers.hold("/slow")
/// let server = try await LoopbackServer.start(answering: answers)
/// // … requests for /slow arrive and wait …
/// answers.release()
/// ```
public final class HeldAnswers: Transport {
    private struct State {
        var paths: Set<String> = []
        var held = 0
        var next = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let inner: any Transport
    private let state = LockedBox(State())

    public init(_ inner: any Transport) {
        self.inner = inner
    }

    /// Holds the answers to requests whose path, without its query, is `path`.
    public func hold(_ path: String) {
        state.withLock { _ = $0.paths.insert(path) }
    }

    /// How many requests are held now.
    public var held: Int { state.current.held }

    /// Answers every held request, and holds no more.
    public func release() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.paths.removeAll()
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in woken { continuation.resume() }
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let path = String((request.path ?? "").prefix { $0 != "?" })
        let id = state.withLock { state -> Int? in
            guard state.paths.contains(path) else { return nil }
            state.next += 1
            state.held += 1
            return state.next
        }
        if let id {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if Task.isCancelled || !state.paths.contains(path) { return true }
                        state.waiting[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
            }
            state.withLock { $0.held -= 1 }
            if Task.isCancelled { throw NetworkError.cancelled }
        }
        return try await inner.send(request, body: body, timeout: timeout)
    }
}
