public import Foundation
public import HTTPCore

extension DomainClient {
    /// A plain call: validates the status and drops the body.
    @discardableResult
    public func send(_ endpoint: some Endpoint) async throws(Factory.DomainError) -> Response<Void> {
        try await run { () async throws(NetworkError) in try await client.send(endpoint) }
    }

    /// A data call: status, headers and body in memory.
    public func data(_ endpoint: some Endpoint) async throws(Factory.DomainError) -> Response<Data> {
        try await run { () async throws(NetworkError) in try await client.data(endpoint) }
    }

    /// A model call: the body decoded as `Model`.
    public func model<Model: Decodable>(_ endpoint: some Endpoint, as type: Model.Type = Model.self) async throws(Factory.DomainError) -> Model {
        try await run { () async throws(NetworkError) in try await client.model(endpoint, as: type) }
    }

    /// A model call that keeps the response around the decoded model.
    public func response<Model: Decodable>(_ endpoint: some Endpoint, as type: Model.Type = Model.self, decoder: JSONDecoder? = nil) async throws(Factory.DomainError) -> Response<Model> {
        try await run { () async throws(NetworkError) in try await client.response(endpoint, as: type, decoder: decoder) }
    }

    /// A mapped-model call: the mapper's entity decoded, then mapped to its model.
    public func model<Mapper: ModelMapper>(_ endpoint: some Endpoint, mapper: Mapper) async throws(Factory.DomainError) -> Mapper.Model {
        try await run { () async throws(NetworkError) in try await client.model(endpoint, mapper: mapper) }
    }

    /// A mapped-model call with a closure: decode an `Entity`, then `map` it.
    public func model<Entity: Decodable, Model>(_ endpoint: some Endpoint, entity: Entity.Type, map: (Entity) throws -> Model) async throws(Factory.DomainError) -> Model {
        try await run { () async throws(NetworkError) in try await client.model(endpoint, entity: entity, map: map) }
    }

    /// An abstraction call: decode `Concrete`, return it as `Abstraction`.
    public func model<Concrete: Decodable, Abstraction>(_ endpoint: some Endpoint, decoding concrete: Concrete.Type, as abstraction: Abstraction.Type) async throws(Factory.DomainError) -> Abstraction {
        try await run { () async throws(NetworkError) in try await client.model(endpoint, decoding: concrete, as: abstraction) }
    }

    /// Sends an ad-hoc request and decodes its `Response` type.
    @discardableResult
    public func send<Model: Decodable>(_ request: Request<Model>) async throws(Factory.DomainError) -> Response<Model> {
        try await run { () async throws(NetworkError) in try await client.send(request) }
    }

    /// Sends an ad-hoc request whose result is the body's bytes.
    @discardableResult
    public func send(_ request: Request<Data>) async throws(Factory.DomainError) -> Response<Data> {
        try await run { () async throws(NetworkError) in try await client.send(request) }
    }

    /// Sends an ad-hoc request with no result; validates the status.
    @discardableResult
    public func send(_ request: Request<Void>) async throws(Factory.DomainError) -> Response<Void> {
        try await run { () async throws(NetworkError) in try await client.send(request) }
    }

    /// Streams the body to the file at `destination`.
    @discardableResult
    public func download(_ endpoint: some Endpoint, to destination: URL) async throws(Factory.DomainError) -> Response<URL> {
        try await run { () async throws(NetworkError) in try await client.download(endpoint, to: destination) }
    }

    /// Sends the file at `file` as the body, streamed from disk.
    public func upload(_ endpoint: some Endpoint, fromFile file: URL) async throws(Factory.DomainError) -> Response<Data> {
        try await run { () async throws(NetworkError) in try await client.upload(endpoint, fromFile: file) }
    }
}
