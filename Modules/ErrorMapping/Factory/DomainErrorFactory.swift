public import HTTPCore

/// Makes a domain's own error from a `NetworkError` (Aphrodite's domain error factory).
///
/// A ``DomainClient`` calls the factory for every failed call, with the error body already
/// decoded by ``errorBody`` (RFC 9457 problem details unless the factory picks another type),
/// and throws what the factory returns, with typed throws.
///
/// ```swift
/// enum ShopError: Error {
///     case signInRequired
///     case outOfStock(sku: String)
///     case unavailable
///     case other(String)
/// }
///
/// struct ShopErrors: DomainErrorFactory {
///     func make(from error: NetworkError, body: ProblemDetails?) -> ShopError {
///         switch FailureCategory(error) {
///         case .unauthorized: .signInRequired
///         case .client(409) where body?.type == "https://shop.test/out-of-stock":
///             .outOfStock(sku: body?[extension: "sku"]?.stringValue ?? "?")
///         case .server, .transport(.notConnected), .transport(.timedOut), .offline: .unavailable
///         default: .other(body?.detail ?? "\(error)")
///         }
///     }
/// }
///
/// let shop = DomainClient(client: client, factory: ShopErrors())
/// do throws(ShopError) { try await shop.send(ShopAPI.order(sku: "A1")) }
/// catch .outOfStock(let sku) { print("no more", sku) }   // a ShopError case, no cast
/// catch { print(error) }                                  // error: ShopError
/// ```
public protocol DomainErrorFactory<DomainError>: Sendable {
    /// The error the domain's calls throw.
    associatedtype DomainError: Error
    /// What an error response's body decodes into; ``ProblemDetails`` by default.
    associatedtype ErrorBody: Sendable = ProblemDetails

    /// How error bodies are decoded; ``ErrorBodyDecoder/problemDetails`` by default.
    var errorBody: ErrorBodyDecoder<ErrorBody> { get }

    /// The domain error for `error`, with the decoded error body when the failure came with
    /// a response whose body decoded.
    func make(from error: NetworkError, body: ErrorBody?) -> DomainError
}

extension DomainErrorFactory where ErrorBody == ProblemDetails {
    /// Problem details (`application/problem+json`, or JSON) decoded from error responses.
    public var errorBody: ErrorBodyDecoder<ProblemDetails> { .problemDetails }
}

extension DomainErrorFactory {
    /// The domain error for `error`: an error of the domain's type carried by
    /// `NetworkError.underlying(_:)` (thrown by an interceptor or plugin) as it is,
    /// otherwise what ``make(from:body:)`` makes of it and its decoded body.
    public func domainError(for error: NetworkError) -> DomainError {
        if case .underlying(let inner) = error, let domain = inner as? DomainError { return domain }
        return make(from: error, body: errorBody.decode(from: error))
    }
}
