import Logging
import HTTPTypes
import Hummingbird
import HummingbirdAuth

/// Signs the user in from `Authorization` (basic or bearer) and enforces roles before
/// routing: no credentials or wrong ones get 401 with `WWW-Authenticate` (so a browser asks),
/// a read-only user gets 403 for any method other than GET and HEAD. `/healthz` and the
/// stylesheet are open.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    let users: ConsoleUsers
    /// The paths anyone may read, prefix included.
    let openPaths: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if openPaths.contains(request.uri.path) { return try await next(request, context) }
        guard let user = signedIn(request) else {
            var response = ConsoleResponse.plain(.unauthorized, "authentication required\n")
            response.headers[.wwwAuthenticate] = #"Basic realm="Courier console", charset="UTF-8""#
            return response
        }
        guard user.role == .admin || request.method == .get || request.method == .head else {
            context.logger.notice("console refused a read-only user's change", metadata: ["user": "\(user.name)", "method": "\(request.method)", "path": "\(request.uri.path)"])
            return ConsoleResponse.plain(.forbidden, "read-only user\n")
        }
        var context = context
        context.user = user
        return try await next(request, context)
    }

    private func signedIn(_ request: Request) -> ConsoleUser? {
        if let basic = request.headers.basic { return users.user(name: basic.username, password: basic.password) }
        if let bearer = request.headers.bearer { return users.user(token: bearer.token) }
        return nil
    }
}
