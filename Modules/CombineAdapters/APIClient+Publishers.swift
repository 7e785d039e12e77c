#if canImport(Combine)
public import Combine
#else
public import OpenCombine
#endif
public import Foundation
public import HTTPCore

/// Publishers for every call kind, for code ported from Aphrodite or Combine Networking.
///
/// ```swift
/// client.modelPublisher(DogAPI.random, as: Dog.self)
///     .sink(receiveCompletion: { print($0) }, receiveValue: { dog in print(dog.name) })
///     .store(in: &cancellables)
/// ```
extension APIClient {
    /// A plain call (the body is dropped); publishes the response.
    public func sendPublisher(_ endpoint: some Endpoint) -> AnyPublisher<Response<Void>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.send(endpoint) }.eraseToAnyPublisher()
    }

    /// Combine Networking's "completion only": publishes nothing but completion.
    public func completionPublisher(_ endpoint: some Endpoint) -> AnyPublisher<Never, NetworkError> {
        sendPublisher(endpoint).ignoreOutput().eraseToAnyPublisher()
    }

    /// A data call.
    public func dataPublisher(_ endpoint: some Endpoint) -> AnyPublisher<Response<Data>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.data(endpoint) }.eraseToAnyPublisher()
    }

    /// A model call.
    public func modelPublisher<Model: Decodable & Sendable>(_ endpoint: some Endpoint, as type: Model.Type = Model.self) -> AnyPublisher<Model, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.model(endpoint, as: type) }.eraseToAnyPublisher()
    }

    /// A model call that keeps the response around the model.
    public func responsePublisher<Model: Decodable & Sendable>(_ endpoint: some Endpoint, as type: Model.Type = Model.self) -> AnyPublisher<Response<Model>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.response(endpoint, as: type) }.eraseToAnyPublisher()
    }

    /// A mapped-model call (Aphrodite's entity → model mapper).
    public func modelPublisher<Mapper: ModelMapper>(_ endpoint: some Endpoint, mapper: Mapper) -> AnyPublisher<Mapper.Model, NetworkError> where Mapper.Model: Sendable {
        CallPublisher { () throws(NetworkError) in try await self.model(endpoint, mapper: mapper) }.eraseToAnyPublisher()
    }

    /// An abstraction call: decodes `Concrete`, publishes it as `Abstraction`.
    public func modelPublisher<Concrete: Decodable & Sendable, Abstraction: Sendable>(
        _ endpoint: some Endpoint, decoding concrete: Concrete.Type, as abstraction: Abstraction.Type
    ) -> AnyPublisher<Abstraction, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.model(endpoint, decoding: concrete, as: abstraction) }.eraseToAnyPublisher()
    }

    /// An ad-hoc request with its own response type.
    public func publisher<Model: Decodable & Sendable>(for request: Request<Model>) -> AnyPublisher<Response<Model>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.send(request) }.eraseToAnyPublisher()
    }

    /// A download to a file.
    public func downloadPublisher(_ endpoint: some Endpoint, to destination: URL) -> AnyPublisher<Response<URL>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.download(endpoint, to: destination) }.eraseToAnyPublisher()
    }

    /// An upload from a file.
    public func uploadPublisher(_ endpoint: some Endpoint, fromFile file: URL) -> AnyPublisher<Response<Data>, NetworkError> {
        CallPublisher { () throws(NetworkError) in try await self.upload(endpoint, fromFile: file) }.eraseToAnyPublisher()
    }
}
