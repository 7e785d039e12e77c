public import Foundation
public import HTTPCore

/// Turns a domain model into the `Encodable` entity the API expects: the reverse of
/// HTTPCore's `ModelMapper`, for request bodies.
///
/// ```swift
/// struct NewBuildingMapper: EntityMapper {
///     func entity(from building: Building) throws -> BuildingEntity {
///         BuildingEntity(id: building.id, title: building.name)
///     }
/// }
/// var body: RequestContent { .json(building, mapper: NewBuildingMapper()) }
/// ```
public protocol EntityMapper<Model, Entity>: Sendable {
    /// The domain model the caller has.
    associatedtype Model
    /// What goes on the wire.
    associatedtype Entity: Encodable & Sendable
    /// Maps one model; a thrown error ends the call as `NetworkError.encoding`.
    func entity(from model: Model) throws -> Entity
}

extension RequestContent {
    /// `model` mapped now by `mapper`, then sent as JSON with the client's encoder unless
    /// `encoder` is given. The model need not be `Sendable`: only the entity is kept.
    public static func json<Mapper: EntityMapper>(_ model: Mapper.Model, mapper: Mapper, encoder: JSONEncoder? = nil) -> RequestContent {
        .evaluating { () throws(NetworkError) -> RequestContent in
            .json(try map(model, with: mapper), encoder: encoder)
        }
    }

    /// `model` mapped now by `mapper`, then sent as a form body.
    public static func form<Mapper: EntityMapper>(_ model: Mapper.Model, mapper: Mapper, encoder: QueryEncoder = QueryEncoder()) -> RequestContent {
        .evaluating { () throws(NetworkError) -> RequestContent in
            .form(try map(model, with: mapper), encoder: encoder)
        }
    }

    private static func map<Mapper: EntityMapper>(_ model: Mapper.Model, with mapper: Mapper) throws(NetworkError) -> Mapper.Entity {
        do { return try mapper.entity(from: model) } catch let error as NetworkError { throw error } catch {
            throw .encoding(EncodingFailure(keyPath: [], message: "mapping \(Mapper.Model.self) to \(Mapper.Entity.self) failed: \(error)"))
        }
    }
}
