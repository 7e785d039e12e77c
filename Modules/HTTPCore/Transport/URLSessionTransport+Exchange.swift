import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes

/// One exchange in flight: the response head, the body chunks not yet read, and how it ended.
///
/// The delegate feeds it events (head, chunk, completion); the caller awaits the head and then
/// the chunks. The first terminal event wins: a cancellation or timeout cancels the
/// `URLSessionTask`, and the task's own late "cancelled" completion is then ignored.
final class URLSessionExchange: Sendable {
    private struct State {
        var task: URLSessionTask?
        var head: HTTPResponse?
        var headWaiter: CheckedContinuation<HTTPResponse, any Error>?
        var chunks: [Data] = []
        var firstChunk = 0
        var bufferedBytes = 0
        var bodyWaiter: CheckedContinuation<Data?, any Error>?
        var finished = false
        var failure: NetworkError?
        var timer: Task<Void, Never>?
        var endActions: [@Sendable () -> Void] = []

        var ended: Bool { finished || failure != nil }

        mutating func popChunk() -> Data? {
            guard firstChunk < chunks.count else { return nil }
            let chunk = chunks[firstChunk]
            firstChunk += 1
            bufferedBytes -= chunk.count
            if firstChunk == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                firstChunk = 0
            }
            return chunk
        }

        /// Stops the timer and hands over the end actions, which run outside the lock.
        mutating func takeEndActions() -> [@Sendable () -> Void] {
            timer?.cancel()
            timer = nil
            task = nil
            defer { endActions = [] }
            return endActions
        }
    }

    private let maxBufferedBytes: Int
    private let state = LockedBox(State())

    /// Where tasks are cancelled: a serial queue, whose thread comes from the overcommit pool.
    private static let cancellations = DispatchQueue(label: "courier.URLSessionTransport.cancel")

    init(maxBufferedBytes: Int) {
        self.maxBufferedBytes = maxBufferedBytes
    }

    /// Runs `action` once when the exchange ends, whichever way.
    func onEnd(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.endActions.append(action) }
    }

    /// Registers `task` with `delegate`, arms the deadline and resumes the task.
    func start(_ task: URLSessionTask, deadline: ContinuousClock.Instant?, registeredWith delegate: URLSessionTransportDelegate) {
        state.withLock { $0.task = task }
        delegate.register(self, for: task)
        if let deadline {
            let timer = Task { [weak self] in
                do { try await Task.sleep(until: deadline, clock: .continuous) } catch { return }
                self?.fail(.transport(TransportFailure(.timedOut, "no complete response within the timeout")))
            }
            state.withLock { $0.timer = timer }
        }
        task.resume()
    }

    /// The response head, once it has arrived.
    func head() async throws -> HTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { state in
                if let head = state.head {
                    continuation.resume(returning: head)
                } else if let failure = state.failure {
                    continuation.resume(throwing: failure)
                } else {
                    state.headWaiter = continuation
                }
            }
        }
    }

    /// The next body chunk, or `nil` at the end of the body.
    func nextChunk() async throws -> Data? {
        try await withCheckedThrowingContinuation { continuation in
            state.withLock { state in
                if let failure = state.failure {
                    continuation.resume(throwing: failure)
                } else if let chunk = state.popChunk() {
                    continuation.resume(returning: chunk)
                } else if state.finished {
                    continuation.resume(returning: nil)
                } else {
                    state.bodyWaiter = continuation
                }
            }
        }
    }

    /// The head arrived.
    func receive(head: HTTPResponse) {
        state.withLock { state in
            guard !state.ended, state.head == nil else { return }
            state.head = head
            state.headWaiter?.resume(returning: head)
            state.headWaiter = nil
        }
    }

    /// A body chunk arrived.
    func receive(_ chunk: Data) {
        let overflow = state.withLock { state -> Bool in
            guard !state.ended, !chunk.isEmpty else { return false }
            if let waiter = state.bodyWaiter {
                state.bodyWaiter = nil
                waiter.resume(returning: chunk)
                return false
            }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.count
            return state.bufferedBytes > maxBufferedBytes
        }
        if overflow { fail(.bodyTooLarge(limit: maxBufferedBytes)) }
    }

    /// The task completed; `error` is `nil` when the whole body arrived. `fallbackHead` is the
    /// task's response, for responses URLSession never announced to the delegate.
    func complete(error: NetworkError?, fallbackHead: HTTPResponse?) {
        if let error { return fail(error) }
        let actions = state.withLock { state -> [@Sendable () -> Void]? in
            guard !state.ended else { return nil }
            if state.head == nil {
                guard let fallbackHead else {
                    return nil
                }
                state.head = fallbackHead
                state.headWaiter?.resume(returning: fallbackHead)
                state.headWaiter = nil
            }
            state.finished = true
            if let waiter = state.bodyWaiter {
                state.bodyWaiter = nil
                waiter.resume(returning: nil)
            }
            return state.takeEndActions()
        }
        guard let actions else {
            if fallbackHead == nil {
                fail(.transport(TransportFailure(.invalidResponse, "the exchange ended without an HTTP response")))
            }
            return
        }
        actions.forEach { $0() }
    }

    /// Ends the exchange with `error` unless it already ended, cancelling the task.
    func fail(_ error: NetworkError) {
        let (task, actions) = state.withLock { state -> (URLSessionTask?, [@Sendable () -> Void]) in
            guard !state.ended else { return (nil, []) }
            state.failure = error
            state.chunks.removeAll()
            state.firstChunk = 0
            state.bufferedBytes = 0
            state.headWaiter?.resume(throwing: error)
            state.headWaiter = nil
            state.bodyWaiter?.resume(throwing: error)
            state.bodyWaiter = nil
            return (state.task, state.takeEndActions())
        }
        if let task {
            // Not inline: `fail` runs inside cancellation handlers, and FoundationNetworking up
            // to Swift 6.3.1 cancels with a `sync` onto the task's queue, which can deadlock
            // against the task-status lock such a handler holds (swift-corelibs-foundation 5412).
            // Not on `DispatchQueue.global()` either: on Linux that is the cooperative pool's own
            // root queue, and the `sync` would hold one of its threads (two on two cores).
            Self.cancellations.async { task.cancel() }
        }
        actions.forEach { $0() }
    }
}

/// The session's delegate: routes each task's events to its ``URLSessionExchange`` and refuses
/// every redirect, so 3xx responses reach the client as they are.
///
/// `@unchecked Sendable` is sound: its only stored property is a `LockedBox`, which is
/// `Sendable`; the unchecked part is only the `NSObject` superclass, which holds no state of ours.
final class URLSessionTransportDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let exchanges = LockedBox<[Int: URLSessionExchange]>([:])

    func register(_ exchange: URLSessionExchange, for task: URLSessionTask) {
        exchanges.withLock { $0[task.taskIdentifier] = exchange }
    }

    private func exchange(for task: URLSessionTask) -> URLSessionExchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let head = URLSessionTransport.responseHead(response) {
            exchange(for: dataTask)?.receive(head: head)
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchange(for: dataTask)?.receive(data)
    }

    /// Credentials are the client's business (an auth plugin sets `Authorization`), so a
    /// challenge is answered with the response as it is.
    ///
    /// FoundationNetworking up to Swift 6.3 never completes a task whose 401 challenge gets no
    /// credential (swift-corelibs-foundation issue 5456). By the time the challenge arrives on the
    /// serial delegate queue, the 401's head and whole body have been delivered, so the exchange
    /// is finished here and the task then cancelled; its late "cancelled" is ignored.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(FoundationNetworking)
        if let response = URLSessionTransport.responseHead(challenge.failureResponse), response.status.code == 401 {
            exchange(for: task)?.complete(error: nil, fallbackHead: response)
            completionHandler(.cancelAuthenticationChallenge, nil)
            return
        }
        #endif
        completionHandler(.performDefaultHandling, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        exchange?.complete(
            error: error.map(URLSessionTransport.networkError(for:)),
            fallbackHead: URLSessionTransport.responseHead(task.response)
        )
    }
}
