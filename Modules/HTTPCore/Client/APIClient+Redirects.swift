import Foundation
import HTTPTypes

extension APIClient {
    /// One exchange on the wire, following redirects up to the configured limit.
    ///
    /// Redirects are followed here rather than in the transport so every transport behaves the
    /// same: 303 (and 301/302 after a POST) turn into a GET without a body; 307 and 308 keep
    /// method and body. When a hop leaves the origin (scheme, host, effective port), every
    /// credential field is dropped; a hop from `https` to `http` is refused unless the
    /// configuration allows it (curl CVE-2022-27776 is this class of leak).
    /// The response carries the last hop's request and the number of redirects followed.
    func exchange(_ request: PreparedRequest, context: CallContext, plugins: [any Plugin]) async throws -> TransportResponse {
        var current = request
        var count = 0
        while true {
            for plugin in plugins { await plugin.willSend(current, context: context) }
            if Task.isCancelled { throw NetworkError.cancelled }
            var response = if let limit = context.collectingUpTo {
                try await transport.send(current.head, body: current.body, timeout: current.timeout, collectingUpTo: limit)
            } else {
                try await transport.send(current.head, body: current.body, timeout: current.timeout)
            }
            guard configuration.maxRedirects > 0,
                  let next = try redirect(from: current, response: response.head) else {
                response.request = current.head
                response.redirects = count
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
    func redirect(from request: PreparedRequest, response: HTTPResponse) throws(NetworkError) -> PreparedRequest? {
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
        let origin = Origin(from), targetOrigin = Origin(target)
        if origin?.isSecure == true, targetOrigin?.isSecure == false, !configuration.followsInsecureRedirects {
            throw .insecureRedirect(from: from, to: target)
        }
        if origin != targetOrigin {
            for name in configuration.credentialFields.union(request.credentialFields) { fields[name] = nil }
        }
        next.head = HTTPRequest(method: becomesGet ? .get : method, url: target, headerFields: fields)
        return next
    }
}
