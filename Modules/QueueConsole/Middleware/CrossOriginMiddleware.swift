import Foundation
import Logging
import HTTPTypes
import Hummingbird

/// Refuses cross-origin state-changing requests with 403 before anything runs: the rule of Go
/// 1.25's `CrossOriginProtection`. GET, HEAD and OPTIONS pass. Otherwise, when the browser sent
/// `Sec-Fetch-Site`, only `same-origin` and `none` (typed in by the user) pass; when it sent
/// `Origin` instead, its host must be the request's host; a request with neither comes from
/// no browser (curl, a script) and passes.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.allows(request) else {
            context.logger.notice("console refused a cross-origin request", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)"])
            return ConsoleResponse.plain(.forbidden, "cross-origin request refused\n")
        }
        return try await next(request, context)
    }

    static func allows(_ request: Request) -> Bool {
        if [.get, .head, .options].contains(request.method) { return true }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!] {
            return site == "same-origin" || site == "none"
        }
        guard let origin = request.headers[HTTPField.Name("Origin")!] else { return true }
        guard let host = request.head.authority ?? request.headers[HTTPField.Name("Host")!] else { return false }
        return Self.host(ofOrigin: origin) == host.lowercased()
    }

    /// `host[:port]` of an origin such as `https://console.example.com:8443`; `nil` for `null`.
    static func host(ofOrigin origin: String) -> String? {
        guard let range = origin.range(of: "://") else { return nil }
        let rest = origin[range.upperBound...]
        return rest.prefix { $0 != "/" }.lowercased()
    }
}
