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
///
/// For a caller that reads the whole body into memory (``init(maxBufferedBytes:holdingHeadUpTo:)``),
/// the head is held back until the body has arrived, so the caller wakes once for head and body
/// instead of once for the head, once per chunk and once for the end; past `holdingHeadUpTo`
/// bytes the head is handed over and the rest streams as usual, so memory stays bounded.
///
/// Its continuations are unsafe ones (no checking canary allocated per wait): each waiter is
/// resumed exactly once, under the lock, and cleared in the same step. Any number of tasks may
/// await the head; the body has one reader at a time, and a second concurrent reader is refused
/// with an error rather than left waiting.
final class URLSessionExchange: Sendable {
    private struct State {
        var task: URLSessionTask?
        var head: HTTPResponse?
        /// Every task awaiting the head; each is resumed once, when it arrives or the exchange fails.
        var headWaiters: [UnsafeContinuation<HTTPResponse, any Error>] = []
        /// While set, an arrived head waits for the end of the body, or for more body bytes
        /// than this.
        var holdHeadUpTo: Int?
        /// Set when a completion-handler task was cancelled by the delegate's refusal of a
        /// 401 challenge, not by the exchange.
        var challenged = false
        var chunks: [Data] = []
        var firstChunk = 0
        var bufferedBytes = 0
        /// The one reader awaiting a chunk: a body is one stream, read by one task at a time.
        var bodyWaiter: UnsafeContinuation<Data?, any Error>?
        var finished = false
        var failure: NetworkError?
        /// Where the exchange's deadline is registered, and its token there.
        var deadline: (timers: URLSessionDeadlines, token: UInt64)?
        var endActions: [@Sendable () -> Void] = []

        var ended: Bool { finished || failure != nil }

        /// Hands the head to its waiters, and stops holding it back.
        mutating func releaseHead() {
            holdHeadUpTo = nil
            if let head { resumeHeadWaiters(returning: head) }
        }

        mutating func resumeHeadWaiters(returning head: HTTPResponse) {
            for waiter in headWaiters { waiter.resume(returning: head) }
            headWaiters.removeAll()
        }

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
            if let deadline {
                // Lock order: an exchange's lock, then the deadlines' lock, never the reverse.
                deadline.timers.remove(deadline.token)
                self.deadline = nil
            }
            task = nil
            defer { endActions = [] }
            return endActions
        }
    }

    private let maxBufferedBytes: Int
    /// Whether the head is held back for a caller that reads the whole body into memory.
    let collects: Bool
    /// Whether the task has a completion handler (``completeWhole(data:response:error:)``)
    /// rather than the delegate's events; it is then not registered with the delegate.
    let completionHandler: Bool
    private let state = LockedBox(State())

    /// Where tasks are cancelled: a serial queue, whose thread comes from the overcommit pool.
    private static let cancellations = DispatchQueue(label: "courier.URLSessionTransport.cancel")

    init(maxBufferedBytes: Int) {
        self.maxBufferedBytes = maxBufferedBytes
        self.collects = false
        self.completionHandler = false
    }

    /// An exchange whose head is held back until the body has arrived, or more than
    /// `holdingHeadUpTo` bytes of it (capped at half of `maxBufferedBytes`, so that the reader
    /// then has room to catch up before the read-ahead limit).
    init(maxBufferedBytes: Int, holdingHeadUpTo limit: Int, completionHandler: Bool = false) {
        self.maxBufferedBytes = maxBufferedBytes
        self.collects = true
        self.completionHandler = completionHandler
        state.withLock { $0.holdHeadUpTo = max(0, min(limit, maxBufferedBytes / 2)) }
    }

    /// The whole body of an exchange that holds its head (``collects``), when it has finished
    /// and none of it was read yet; `nil` while the body is still arriving, after it failed, or
    /// for an exchange that streams (whose reader gets the chunks as they came).
    func takeWholeBody() -> Data? {
        guard collects else { return nil }
        return state.withLock { state -> Data? in
            guard state.finished, state.failure == nil, state.firstChunk == 0 else { return nil }
            let chunks = state.chunks
            state.chunks = []
            state.bufferedBytes = 0
            switch chunks.count {
            case 0: return Data()
            case 1: return chunks[0]
            default:
                var whole = Data(capacity: chunks.reduce(0) { $0 + $1.count })
                for chunk in chunks { whole.append(chunk) }
                return whole
            }
        }
    }

    /// Runs `action` once when the exchange ends, whichever way.
    func onEnd(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.endActions.append(action) }
    }

    /// Registers `task` with `delegate`, arms the deadline on `deadlines` and resumes the task.
    func start(
        _ task: URLSessionTask, deadline: ContinuousClock.Instant?, on deadlines: URLSessionDeadlines,
        registeredWith delegate: URLSessionTransportDelegate
    ) {
        state.withLock { $0.task = task }
        if !completionHandler { delegate.register(self, for: task) }
        if let deadline {
            let token = deadlines.add(self, deadline: deadline)
            let ended = state.withLock { state -> Bool in
                if !state.ended { state.deadline = (deadlines, token) }
                return state.ended
            }
            if ended { deadlines.remove(token) }
        }
        task.resume()
    }

    /// A completion-handler task ended: its head and whole body, or its error, at once. A
    /// cancellation the exchange did not ask for comes from the delegate refusing a 401
    /// challenge: it is marked, so that the request can be sent again, streamed.
    func completeWhole(data: Data?, response: URLResponse?, error: (any Error)?) {
        if let error {
            let failure = URLSessionTransport.networkError(for: error)
            if case .cancelled = failure { state.withLock { if !$0.ended { $0.challenged = true } } }
            return complete(error: failure, fallbackHead: nil)
        }
        if let head = URLSessionTransport.responseHead(response) {
            receive(head: head)
            if let data { receive(data) }
        }
        complete(error: nil, fallbackHead: nil)
    }

    /// Whether the delegate's refusal of a 401 challenge cancelled the task.
    var wasChallenged: Bool { state.withLock { $0.challenged } }

    /// Whether the head has arrived (read on the delegate queue, which alone delivers it).
    var hasHead: Bool { state.withLock { $0.head != nil } }

    /// The tasks parked for the head, and whether a reader is parked for a chunk: for tests.
    var parked: (heads: Int, body: Bool) { state.withLock { ($0.headWaiters.count, $0.bodyWaiter != nil) } }

    /// The response head, once it has arrived.
    func head() async throws -> HTTPResponse {
        try await withUnsafeThrowingContinuation { continuation in
            state.withLock { state in
                if let head = state.head, state.holdHeadUpTo == nil {
                    continuation.resume(returning: head)
                } else if let failure = state.failure {
                    continuation.resume(throwing: failure)
                } else {
                    state.headWaiters.append(continuation)
                }
            }
        }
    }

    /// The next body chunk, or `nil` at the end of the body.
    func nextChunk() async throws -> Data? {
        try await withUnsafeThrowingContinuation { continuation in
            state.withLock { state in
                if let failure = state.failure {
                    continuation.resume(throwing: failure)
                } else if let chunk = state.popChunk() {
                    continuation.resume(returning: chunk)
                } else if state.finished {
                    continuation.resume(returning: nil)
                } else if state.bodyWaiter != nil {
                    // Taking the place of the reader that waits would leave it waiting for ever.
                    continuation.resume(throwing: NetworkError.invalidRequest(.other("the response body is already being read by another task")))
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
            if state.holdHeadUpTo == nil { state.resumeHeadWaiters(returning: head) }
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
            if let limit = state.holdHeadUpTo {
                // Nobody reads yet: the limit to check is the holding one.
                if state.bufferedBytes > limit { state.releaseHead() }
                return false
            }
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
            }
            state.finished = true
            state.releaseHead()
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
            for waiter in state.headWaiters { waiter.resume(throwing: error) }
            state.headWaiters.removeAll()
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
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        // The head normally came through `didReceive response`; converting the task's response
        // again (a bridged dictionary, parsed and sorted) is needed only when it did not.
        exchange.complete(
            error: error.map(URLSessionTransport.networkError(for:)),
            fallbackHead: exchange.hasHead ? nil : URLSessionTransport.responseHead(task.response)
        )
    }
}
