import Foundation

/// The built-in routes of ``TestHTTPServer``. Paths and query items script the scenario;
/// sizes are in bytes and delays in milliseconds.
///
/// | route | answer |
/// | --- | --- |
/// | `/echo`, `/upload` (any method) | 200, an ``EchoResponse`` as JSON; `?status=N` answers N instead, each `?response-header=Name:value` adds a header |
/// | `/status/{code}` | `code` with an empty body (no `Content-Length` for 204 and 304) |
/// | `/no-content` | 204 |
/// | `/bytes/{n}` | `n` ``TestPayload`` bytes with `Content-Length`, streamed in 64 KiB writes; `?chunked=1` sends them chunked |
/// | `/chunked?count=c&size=s&delay=d` | `c` chunks of `s` payload bytes, `d` ms apart |
/// | `/delay/{ms}` | waits, then the echo |
/// | `/stall/{n}` | promises `2n` bytes, sends `n`, then sends nothing more (until the connection closes) |
/// | `/drop/{n}` | promises `2n` bytes, sends `n`, closes the connection |
/// | `/garbage` | bytes that are not HTTP, then closes |
/// | `/gzip` | ``GzipFixture/compressed`` with `Content-Encoding: gzip` |
/// | `/redirect/{n}` | a chain of `n` relative redirects ending at `/echo`; `?status=` picks 301/302/303/307/308 (302 by default) |
/// | `/absolute-redirect/{n}` | the same with absolute `Location`s built from the `Host` header |
/// | `/redirect-to?url=u&status=s` | one redirect to `u` (which may name another host, such as `localhost`) |
/// | anything else | 404 with the echo |
public enum Routes {
    /// Writes the response to one request.
    public typealias Handler = @Sendable (ServerRequest, ResponseWriter) async throws -> Void

    /// The built-in handler for `request`.
    static func handler(for request: ServerRequest) -> Handler {
        let parts = request.pathComponents
        let first = parts.first.map(String.init) ?? ""
        let number = parts.count > 1 ? Int(parts[1]) : nil
        switch (first, number) {
        case ("echo", _), ("upload", _):
            return echo
        case ("status", let code?):
            return { _, writer in try await writer.respond(status: code) }
        case ("no-content", _):
            return { _, writer in try await writer.respond(status: 204) }
        case ("bytes", let count?):
            return { request, writer in try await bytes(count, chunked: request.queryValue("chunked") == "1", writer: writer) }
        case ("chunked", _):
            return chunked
        case ("delay", let milliseconds?):
            return { request, writer in
                try await Task.sleep(for: .milliseconds(milliseconds))
                try await echo(request, writer)
            }
        case ("stall", let count?):
            return { _, writer in try await stall(count, writer: writer) }
        case ("drop", let count?):
            return { _, writer in try await drop(count, writer: writer) }
        case ("garbage", _):
            return garbage
        case ("gzip", _):
            return gzip
        case ("redirect", let count?):
            return { request, writer in try await redirectChain(count, absolute: false, request: request, writer: writer) }
        case ("absolute-redirect", let count?):
            return { request, writer in try await redirectChain(count, absolute: true, request: request, writer: writer) }
        case ("redirect-to", _):
            return redirectTo
        default:
            return { request, writer in try await writer.respondJSON(EchoResponse(request), status: 404) }
        }
    }
}
