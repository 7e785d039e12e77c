#if canImport(Combine)
public import Combine
#else
public import OpenCombine
#endif
public import HTTPCore
import Foundation

/// A publisher of one async call: the call starts on the first demand, publishes its value and
/// finishes, or fails with its `HTTPCore.NetworkError`. Cancelling the subscription cancels
/// the call on the wire.
///
/// Combine on Darwin, OpenCombine elsewhere; the same code compiles on both.
public struct CallPublisher<Output: Sendable>: Publisher {
    public typealias Failure = NetworkError

    let call: @Sendable () async throws(NetworkError) -> Output

    /// A publisher that runs `call` once for each subscriber, on its first demand.
    public init(_ call: @escaping @Sendable () async throws(NetworkError) -> Output) {
        self.call = call
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == NetworkError {
        let subscription = CallSubscription(subscriber: AnySubscriber(subscriber), call: call)
        subscriber.receive(subscription: subscription)
    }
}

/// The subscription of one ``CallPublisher``: its state is behind a lock, and the subscriber
/// is called from the call's task.
final class CallSubscription<Output: Sendable>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private var subscriber: AnySubscriber<Output, NetworkError>?
    private var task: Task<Void, Never>?
    private var started = false
    private let call: @Sendable () async throws(NetworkError) -> Output

    init(subscriber: AnySubscriber<Output, NetworkError>, call: @escaping @Sendable () async throws(NetworkError) -> Output) {
        self.subscriber = subscriber
        self.call = call
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        lock.lock()
        guard !started, subscriber != nil else {
            lock.unlock()
            return
        }
        started = true
        task = Task.detached { [self] in
            let result: Result<Output, NetworkError>
            do throws(NetworkError) { result = .success(try await call()) } catch { result = .failure(error) }
            deliver(result)
        }
        lock.unlock()
    }

    private func deliver(_ result: Result<Output, NetworkError>) {
        lock.lock()
        let target = subscriber
        subscriber = nil
        lock.unlock()
        guard let target else { return }
        switch result {
        case .success(let value):
            _ = target.receive(value)
            target.receive(completion: .finished)
        case .failure(let error):
            target.receive(completion: .failure(error))
        }
    }

    func cancel() {
        lock.lock()
        let task = self.task
        subscriber = nil
        lock.unlock()
        task?.cancel()
    }
}
