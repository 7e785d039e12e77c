/// Turns a decoded transport entity into a domain model (Aphrodite's mapped-model calls).
///
/// ```swift
/// struct BuildingMapper: ModelMapper {
///     func map(_ entity: BuildingEntity) throws -> Building {
///         Building(id: entity.id, name: entity.title)
///     }
/// }
/// let building = try await client.model(BuildingAPI.get(7), mapper: BuildingMapper())
/// ```
public protocol ModelMapper<Entity, Model>: Sendable {
    /// What the body decodes into.
    associatedtype Entity: Decodable
    /// What the caller gets.
    associatedtype Model
    /// Maps one entity; a thrown error ends the call as ``NetworkError/decoding(_:)``.
    func map(_ entity: Entity) throws -> Model
}
