import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's responses: HTML pages, JSON twins, plain errors and post/redirect/get.
enum ConsoleResponse {
    static func plain(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// 303 to `location` (a path under the console's prefix): the browser GETs it, so a reload
    /// does not post the form again.
    static func seeOther(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }
}

extension Request {
    /// Whether the client asked for the JSON twin of a page.
    var wantsJSON: Bool {
        guard let accept = headers[.accept] else { return false }
        return accept.contains("application/json") && !accept.contains("text/html")
    }

    /// The fields of a posted `application/x-www-form-urlencoded` body, repeated names kept in
    /// order (`id=1&id=2`); at most 64 KiB.
    func formFields() async throws -> [(name: String, value: String)] {
        let buffer = try await body.collect(upTo: 64 * 1024)
        return Self.parseForm(String(buffer: buffer))
    }

    /// The fields of the query string, decoded as a browser's GET form encodes them: `+` is a
    /// space there too, which `uri.queryParameters` leaves a `+` (a name filter `POST /orders`
    /// typed in the page would match nothing).
    var queryFields: [(name: String, value: String)] {
        Self.parseForm(uri.query ?? "")
    }

    static func parseForm(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decode(parts[0]) else { return nil }
            return (name, parts.count > 1 ? decode(parts[1]) ?? "" : "")
        }
    }
}
