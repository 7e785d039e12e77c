public import Foundation
import HTTPTypes

/// Observes and shapes every call it is scoped to, at three moments.
///
/// Plugins run in the order they were configured: ``prepare(_:context:)`` once per call, before
/// any interceptor; ``willSend(_:context:)`` just before each exchange goes on the wire
/// (redirect hops and retries included); ``didReceive(_:for:context:)`` once, when the call ends.
/// See `Docs/Plugins.md` for the whole order.
///
/// ```swift
/// struct APIKeyPlugin: Plugin {
///     let key: String
///     var scope: PluginScope { "weather" }   // only endpoints in the "weather" scope
///     func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
///         var request = request
///         request.headers[HTTPField.Name("X-API-Key")!] = key
///         return request
///     }
/// }
/// ```
public protocol Plugin: Sendable {
    /// Which endpoints this plugin applies to; ``PluginScope/universal`` by default.
    var scope: PluginScope { get }

    /// Changes the request before it is sent (add a header, sign it). May suspend, to fetch a
    /// token for instance; throwing ends the call with that error.
    func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest

    /// Sees each exchange just before it goes on the wire.
    func willSend(_ request: PreparedRequest, context: CallContext) async

    /// Sees how the call ended: the response (its body when the call read it into memory), or
    /// the error. `request` is the request as ``prepare(_:context:)`` left it (before redirects).
    func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async
}

extension Plugin {
    public var scope: PluginScope { .universal }
    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest { request }
    public func willSend(_ request: PreparedRequest, context: CallContext) async {}
    public func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {}
}
