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
    /// The role of a request without `Authorization` whose `Host` is a loopback name; `nil`: 401.
    var anonymous: ConsoleRole? = nil
    /// Where the hashes of passwords not verified lately run: off the cooperative pool, on half
    /// the cores at most.
    let checks: PasswordChecks
    /// Passwords verified in the last minute: a polling page costs no hash per request.
    var verified = VerifiedCredentials()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if openPaths.contains(request.uri.path) { return try await next(request, context) }
        if let anonymous, request.headers[.authorization] == nil {
            guard Self.isLoopback(host: request.headers[HTTPField.Name("Host")!] ?? request.head.authority) else {
                return ConsoleResponse.plain(.forbidden, "this console has no users: it answers only at localhost, 127.0.0.1 or [::1]\n")
            }
            var context = context
            context.user = ConsoleUser(name: "anonymous", role: anonymous)
            return try await next(request, context)
        }
        let user: ConsoleUser
        switch await signedIn(request) {
        case .checked(let known?):
            user = known
        case .checked(nil):
            var response = ConsoleResponse.plain(.unauthorized, "authentication required\n")
            response.headers[.wwwAuthenticate] = #"Basic realm="Courier console", charset="UTF-8""#
            return response
        case .busy:
            // As many passwords as may be are being hashed: nothing more is queued behind them.
            var response = ConsoleResponse.plain(.tooManyRequests, "too many sign-ins are being checked; try again in a second\n")
            response.headers[.retryAfter] = "1"
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

    /// Whether `authority` (`host[:port]`) names this machine: `localhost`, a 127/8 address or `[::1]`.
    static func isLoopback(host authority: String?) -> Bool {
        guard var host = authority?.lowercased() else { return false }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            return host[host.index(after: host.startIndex)..<close] == "::1"
        }
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        if host == "localhost" || host == "localhost." { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// The user the request's credentials name. A password verified within the last minute is
    /// taken at once; any other is hashed by ``checks``, off the cooperative pool.
    private func signedIn(_ request: Request) async -> PasswordChecks.Outcome {
        if let basic = request.headers.basic {
            let (name, password) = (basic.username, basic.password)
            if let cached = verified.cached(name: name, password: password) { return .checked(cached) }
            let users = users
            let outcome = await checks.run { users.user(name: name, password: password) }
            if case .checked(let user?) = outcome { verified.keep(user, name: name, password: password) }
            return outcome
        }
        // A token's hash is one SHA-256: cheap enough for any thread.
        if let bearer = request.headers.bearer { return .checked(users.user(token: bearer.token)) }
        return .checked(nil)
    }
}
