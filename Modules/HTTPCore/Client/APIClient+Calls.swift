public import Foundation
import HTTPTypes

extension APIClient {
    /// A plain call: validates the status and drops the body. A `Request<Void>` (a DELETE,
    /// say) is sent here too, as any endpoint is.
    @discardableResult
    public func send(_ endpoint: some Endpoint) async throws(NetworkError) -> Response<Void> {
        try await perform(endpoint, read: Self.dropBody)
    }

    static func dropBody(_ raw: TransportResponse, _ request: HTTPRequest) async throws -> (value: Void, bodyForPlugins: Data, bytes: Int) {
        var bytes = 0
        for try await chunk in raw.body { bytes += chunk.count }
        return ((), Data(), bytes)
    }

    /// A data call: the status, headers and body in memory, up to the configured limit.
    public func data(_ endpoint: some Endpoint) async throws(NetworkError) -> Response<Data> {
        try await perform(endpoint, collectingUpTo: configuration.maxBodySize) { raw, _ in
            let data = try await raw.collectBody(upTo: configuration.maxBodySize)
            return (data, data, data.count)
        }
    }

    /// A model call: the body decoded as `Model` with the client's decoder.
    public func model<Model: Decodable>(_ endpoint: some Endpoint, as type: Model.Type = Model.self) async throws(NetworkError) -> Model {
        try await response(endpoint, as: type).body
    }

    /// A model call that keeps the response around the decoded model.
    public func response<Model: Decodable>(
        _ endpoint: some Endpoint,
        as type: Model.Type = Model.self,
        decoder: JSONDecoder? = nil
    ) async throws(NetworkError) -> Response<Model> {
        let decoder = decoder ?? configuration.decoder
        return try await perform(endpoint, collectingUpTo: configuration.maxBodySize) { raw, request in
            let data = try await raw.collectBody(upTo: configuration.maxBodySize)
            return (try decode(Model.self, from: data, decoder: decoder, raw: raw, request: request), data, data.count)
        }
    }

    /// A mapped-model call: the body decoded as the mapper's entity, then mapped to its model.
    public func model<Mapper: ModelMapper>(_ endpoint: some Endpoint, mapper: Mapper) async throws(NetworkError) -> Mapper.Model {
        try await model(endpoint, entity: Mapper.Entity.self, map: mapper.map)
    }

    /// A mapped-model call with a closure: decode an `Entity`, then `map` it.
    public func model<Entity: Decodable, Model>(
        _ endpoint: some Endpoint,
        entity: Entity.Type,
        map: (Entity) throws -> Model
    ) async throws(NetworkError) -> Model {
        let entity = try await model(endpoint, as: entity)
        do { return try map(entity) } catch {
            throw NetworkError.decoding(DecodingFailure(type: String(describing: Model.self), codingPath: [], message: "mapping \(Entity.self) failed: \(error)", response: nil))
        }
    }

    /// An abstraction call: decode the concrete type, return it as the abstraction
    /// (a protocol existential, usually), so callers never name the concrete type.
    ///
    /// ```swift
    /// let dog: any Animal = try await client.model(DogAPI.random, decoding: Dog.self, as: (any Animal).self)
    /// ```
    public func model<Concrete: Decodable, Abstraction>(
        _ endpoint: some Endpoint,
        decoding concrete: Concrete.Type,
        as abstraction: Abstraction.Type
    ) async throws(NetworkError) -> Abstraction {
        let value = try await model(endpoint, as: concrete)
        guard let cast = value as? Abstraction else {
            throw .decoding(DecodingFailure(type: String(describing: Abstraction.self), codingPath: [], message: "\(Concrete.self) does not conform to \(Abstraction.self)", response: nil))
        }
        return cast
    }

    /// Sends an ad-hoc request and decodes its `Response` type, with the request's decoder
    /// when it has one.
    @discardableResult
    public func send<Model: Decodable>(_ request: Request<Model>) async throws(NetworkError) -> Response<Model> {
        try await response(request, as: Model.self, decoder: request.decoder)
    }

    /// Sends an ad-hoc request whose result is the body's bytes.
    @discardableResult
    public func send(_ request: Request<Data>) async throws(NetworkError) -> Response<Data> {
        try await data(request)
    }

    /// Streams the body to `destination`, replacing any file there only when the whole body
    /// arrived; memory stays constant whatever the size.
    @discardableResult
    public func download(_ endpoint: some Endpoint, to destination: URL) async throws(NetworkError) -> Response<URL> {
        try await perform(endpoint) { raw, _ in
            let bytes = try await FileSink.write(raw.body, to: destination)
            return (destination, Data(), bytes)
        }
    }

    /// Sends the file at `file` as the endpoint's body, streamed from disk, and returns the
    /// response body in memory.
    public func upload(_ endpoint: some Endpoint, fromFile file: URL) async throws(NetworkError) -> Response<Data> {
        let body = try RequestBody.file(file)
        return try await perform(endpoint, bodyOverride: body, collectingUpTo: configuration.maxBodySize) { raw, _ in
            let data = try await raw.collectBody(upTo: configuration.maxBodySize)
            return (data, data, data.count)
        }
    }

    private func decode<Model: Decodable>(_ type: Model.Type, from data: Data, decoder: JSONDecoder, raw: TransportResponse, request: HTTPRequest) throws -> Model {
        do { return try decoder.decode(Model.self, from: data) } catch let error as DecodingError {
            let excerpt = data.prefix(configuration.maxErrorBodySize)
            let response = Response(status: raw.head.status, headers: raw.head.headerFields, body: Data(excerpt), request: request)
            throw NetworkError.decoding(DecodingFailure(error, type: Model.self, response: response))
        }
    }
}
