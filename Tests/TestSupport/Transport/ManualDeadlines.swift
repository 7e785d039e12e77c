public import HTTPCore
import HTTPTypes

/// Request deadlines that pass when a test says, not when a clock does: a transport wrapped by
/// ``transport(over:)`` sends through the inner one with no timeout of its own, and every send
/// under way that was given a timeout fails as a timeout (``TransportFailure/Kind/timedOut``,
/// as a real transport's deadline does) when the test calls ``expire()``. A send given no
/// timeout is never cut short.
///
/// A test of "a send that misses its deadline, then one that meets it" then holds the first
/// answer at its server and expires the deadline from there, so neither the server's delay
/// nor the client's deadline depends on how fast the machine is:
///
/// ```swift
/// let deadlines = ManualDeadlines()
/// server.route("/slow") { _, writer in
///     if firstCall {
///         deadlines.expire()                        // the client's deadline passes now
///         try await Task.sleep(for: .hangGuard)     // and the answer never comes
///     }
///     try await writer.respond(status: 200)
/// }
/// let client = APIClient(baseURL: server.baseURL, transport: deadlines.transport(over: transport))
/// ```
public final class ManualDeadlines: Sendable {
    private struct State {
        var next = 0
        /// Sends under way, and whether their deadline has passed.
        var underWay: [Int: Bool] = [:]
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
        var expired = 0
    }

    private let state = LockedBox(State())

    public init() {}

    /// How many sends with a timeout are under way.
    public var underWay: Int { state.current.underWay.count }

    /// How many sends failed because ``expire()`` passed their deadline.
    public var expired: Int { state.current.expired }

    /// Passes the deadline of every send with a timeout under way now (started, not yet
    /// answered), whether or not it has begun to wait for it.
    public func expire() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            for id in state.underWay.keys { state.underWay[id] = true }
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// `inner`, with its timeouts passed by ``expire()``.
    public func transport(over inner: any Transport) -> any Transport {
        DeadlineTransport(inner: inner, deadlines: self)
    }

    /// Registers a send under way: its number, under which ``passed(_:)`` waits.
    fileprivate func register() -> Int {
        state.withLock { state in
            state.next += 1
            state.underWay[state.next] = false
            return state.next
        }
    }

    /// Send `id` is over.
    fileprivate func deregister(_ id: Int) {
        state.withLock { _ = $0.underWay.removeValue(forKey: id) }
    }

    /// Returns when ``expire()`` passes deadline `id` (at once if it has), or when the task is
    /// cancelled.
    fileprivate func passed(_ id: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if Task.isCancelled || state.underWay[id] == true { return true }
                    state.waiting[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }

    fileprivate func countExpiry() { state.withLock { $0.expired += 1 } }
}

/// The transport ``ManualDeadlines/transport(over:)`` makes.
private struct DeadlineTransport: Transport {
    let inner: any Transport
    let deadlines: ManualDeadlines

    private enum Ending: Sendable {
        case answered(Result<TransportResponse, any Error>)
        case deadline
    }

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        guard timeout != nil else { return try await inner.send(request, body: body, timeout: nil) }
        let id = deadlines.register()
        defer { deadlines.deregister(id) }
        let ending = await withTaskGroup(of: Ending.self) { group in
            group.addTask {
                do { return .answered(.success(try await inner.send(request, body: body, timeout: nil))) } catch {
                    return .answered(.failure(error))
                }
            }
            group.addTask {
                await deadlines.passed(id)
                return .deadline
            }
            let first = await group.next() ?? .deadline
            group.cancelAll()
            return first
        }
        switch ending {
        case .answered(let result):
            return try result.get()
        case .deadline:
            if Task.isCancelled { throw NetworkError.cancelled }
            deadlines.countExpiry()
            throw NetworkError.transport(TransportFailure(.timedOut, "the test passed the request's deadline"))
        }
    }
}
