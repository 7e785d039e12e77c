import Logging
import HTTPTypes
import Hummingbird

/// Adds the console's security headers to every response, errors included:
/// a Content-Security-Policy that allows this origin only (no inline script or style, forms
/// posted here only, no framing), `X-Content-Type-Options: nosniff` and
/// `Referrer-Policy: no-referrer` (entry ids and filters stay out of other sites' logs).
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    static let headers: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!: "default-src 'self'; form-action 'self'; frame-ancestors 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            // The queue's own errors (a store that cannot be read) are not the client's to see.
            context.logger.error("console request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            response = ConsoleResponse.plain(.internalServerError, "internal error\n")
        }
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}
