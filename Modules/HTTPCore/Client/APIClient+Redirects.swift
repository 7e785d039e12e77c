import Foundation
import HTTPTypes

extension APIClient {
    /// One exchange on the wire, following redirects up to the configured limit.
    ///
    /// Redirects are followed here rather than in the transport so every transport behaves the
    /// same: 303 (and 301/302 after a POST) turn into a GET without a body; 307 and 308 keep
    /// method and body; `Authorization` and `Cookie` are dropped when the host changes.
    func exchange(_ request: PreparedRequest, context: CallContext, plugins: [any Plugin], hops: HopRecorder) async throws -> TransportResponse {
        var current = request
        var count = 0
        while true {
            for plugin in plugins { await plugin.willSend(current, context: context) }
            if Task.isCancelled { throw NetworkError.cancelled }
            let response = try await transport.send(current.head, body: current.body, timeout: current.timeout)
            guard configuration.maxRedirects > 0,
                  let next = redirect(from: current, response: response.head) else {
                hops.record(count: count, request: current.head)
                return response
            }
            await response.body.discard()
            count += 1
            guard count <= configuration.maxRedirects else {
                throw NetworkError.tooManyRedirects(limit: configuration.maxRedirects, lastURL: next.url)
            }
            current = next
        }
    }

    /// The request a 3xx response sends the client to, or `nil` when it is not a redirect.
    func redirect(from request: PreparedRequest, response: HTTPResponse) -> PreparedRequest? {
        let code = response.status.code
        guard [301, 302, 303, 307, 308].contains(code),
              let location = response.headerFields[.location],
              let from = request.url,
              let target = URL(string: location, relativeTo: from)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        var next = request
        let method = request.head.method
        let becomesGet = code == 303 ? method != .head : (code == 301 || code == 302) && method == .post
        var fields = request.head.headerFields
        if becomesGet {
            next.body = nil
            fields[.contentLength] = nil
            fields[.contentType] = nil
        }
        if target.host?.lowercased() != from.host?.lowercased() || target.port != from.port {
            fields[.authorization] = nil
            fields[.cookie] = nil
            fields[.proxyAuthorization] = nil
        }
        next.head = HTTPRequest(method: becomesGet ? .get : method, url: target, headerFields: fields)
        return next
    }
}
