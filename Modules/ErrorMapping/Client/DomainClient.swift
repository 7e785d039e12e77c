public import HTTPCore

/// An `APIClient` whose calls throw a domain's own error type, made by a
/// ``DomainErrorFactory`` (Aphrodite's facade, with Swift's typed throws).
///
/// Every kind of call `APIClient` has is here with the same shape; only the error type
/// differs, so `catch` sees `Factory.DomainError` without a cast.
///
/// ```swift
/// let shop = DomainClient(client: client, factory: ShopErrors())
/// do throws(ShopError) {    // names the type, so it also works inside a closure
///     let order: Order = try await shop.model(ShopAPI.order(id: 7))
/// } catch .signInRequired {
///     showLogin()
/// } catch {
///     show(error)        // error: ShopError
/// }
/// ```
public struct DomainClient<Factory: DomainErrorFactory>: Sendable {
    /// The client calls go through.
    public let client: APIClient
    /// Makes the domain errors.
    public let factory: Factory

    /// A facade over `client` whose errors `factory` makes.
    public init(client: APIClient, factory: Factory) {
        self.client = client
        self.factory = factory
    }

    /// Runs `call`, turning its `NetworkError` into the domain's error.
    ///
    /// The building block for the calls; use it for your own extensions of `APIClient`:
    /// ```swift
    /// let page = try await shop.run { () async throws(NetworkError) in try await client.page(of: query) }
    /// ```
    public func run<Value>(_ call: () async throws(NetworkError) -> Value) async throws(Factory.DomainError) -> Value {
        do {
            return try await call()
        } catch {
            throw factory.domainError(for: error)
        }
    }
}
