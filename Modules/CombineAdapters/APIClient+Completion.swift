public import Dispatch
public import Foundation
public import HTTPCore

/// A call started with a completion handler: cancel it to cancel the request on the wire.
public final class CallHandle: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) { self.task = task }

    /// Cancels the call; the completion then receives `NetworkError.cancelled` (unless the
    /// result was already delivered).
    public func cancel() { task.cancel() }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { task.isCancelled }
}

/// Completion-handler variants of every call kind, for code ported from Hyperspace or Leash
/// (`import CombineAdapters`, beside the publishers; they need nothing but Dispatch).
///
/// The result is delivered on the queue you name. Name one your program runs: on Linux the
/// main queue runs only under `dispatchMain()` or a run loop.
///
/// ```swift
/// client.model(UserAPI.me, as: User.self, on: .main) { result in
///     switch result {
///     case .success(let user): show(user)
///     case .failure(let error): show(error)
///     }
/// }
/// ```
extension APIClient {
    /// Runs `call` and hands its result to `completion` on `queue`.
    @discardableResult
    public func perform<Value: Sendable>(
        on queue: DispatchQueue,
        _ call: @escaping @Sendable (APIClient) async throws(NetworkError) -> Value,
        completion: @escaping @Sendable (Result<Value, NetworkError>) -> Void
    ) -> CallHandle {
        CallHandle(Task {
            let result: Result<Value, NetworkError>
            do throws(NetworkError) { result = .success(try await call(self)) } catch { result = .failure(error) }
            queue.async { completion(result) }
        })
    }

    /// A plain call (the body is dropped).
    @discardableResult
    public func send(_ endpoint: some Endpoint, on queue: DispatchQueue, completion: @escaping @Sendable (Result<Response<Void>, NetworkError>) -> Void) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.send(endpoint) }, completion: completion)
    }

    /// A data call.
    @discardableResult
    public func data(_ endpoint: some Endpoint, on queue: DispatchQueue, completion: @escaping @Sendable (Result<Response<Data>, NetworkError>) -> Void) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.data(endpoint) }, completion: completion)
    }

    /// A model call.
    @discardableResult
    public func model<Model: Decodable & Sendable>(
        _ endpoint: some Endpoint, as type: Model.Type = Model.self, on queue: DispatchQueue,
        completion: @escaping @Sendable (Result<Model, NetworkError>) -> Void
    ) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.model(endpoint, as: type) }, completion: completion)
    }

    /// A mapped-model call.
    @discardableResult
    public func model<Mapper: ModelMapper>(
        _ endpoint: some Endpoint, mapper: Mapper, on queue: DispatchQueue,
        completion: @escaping @Sendable (Result<Mapper.Model, NetworkError>) -> Void
    ) -> CallHandle where Mapper.Model: Sendable {
        perform(on: queue, { client throws(NetworkError) in try await client.model(endpoint, mapper: mapper) }, completion: completion)
    }

    /// A request with its own response type (Hyperspace's `Request<Response, Error>`).
    @discardableResult
    public func send<Model: Decodable & Sendable>(
        _ request: Request<Model>, on queue: DispatchQueue,
        completion: @escaping @Sendable (Result<Response<Model>, NetworkError>) -> Void
    ) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.send(request) }, completion: completion)
    }

    /// A request with no result (a DELETE, say).
    @discardableResult
    public func send(_ request: Request<Void>, on queue: DispatchQueue, completion: @escaping @Sendable (Result<Response<Void>, NetworkError>) -> Void) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.send(request) }, completion: completion)
    }

    /// A download to a file.
    @discardableResult
    public func download(_ endpoint: some Endpoint, to destination: URL, on queue: DispatchQueue, completion: @escaping @Sendable (Result<Response<URL>, NetworkError>) -> Void) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.download(endpoint, to: destination) }, completion: completion)
    }

    /// An upload from a file.
    @discardableResult
    public func upload(_ endpoint: some Endpoint, fromFile file: URL, on queue: DispatchQueue, completion: @escaping @Sendable (Result<Response<Data>, NetworkError>) -> Void) -> CallHandle {
        perform(on: queue, { client throws(NetworkError) in try await client.upload(endpoint, fromFile: file) }, completion: completion)
    }
}
