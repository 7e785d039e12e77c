import Foundation
import HTTPCore
import TestSupport

/// What httpbin's `/get`, `/post`, `/put`, `/patch`, `/delete` and `/anything` send back.
struct HTTPBinEcho<JSON: Decodable & Sendable>: Decodable, Sendable {
    var args: [String: OneOrMany]
    var headers: [String: String]
    var url: String
    var form: [String: OneOrMany]?
    var data: String?
    var json: JSON?
    var method: String?
}

/// httpbin writes a repeated key as a list and a single one as a string.
enum OneOrMany: Decodable, Sendable, Equatable {
    case one(String)
    case many([String])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(String.self) {
            self = .one(value)
        } else {
            self = .many(try container.decode([String].self))
        }
    }

    var values: [String] {
        switch self {
        case .one(let value): [value]
        case .many(let values): values
        }
    }
}

/// A body with no JSON of interest.
struct NoJSON: Decodable, Sendable {}

/// The JSON document the tests send.
struct Greeting: Codable, Sendable, Equatable {
    var message: String
    var count: Int
    var tags: [String]
}

extension HTTPBinServer {
    /// A client for this server over `transport`.
    func client(_ transport: NamedTransport, configure: (inout ClientConfiguration) -> Void = { _ in }) -> APIClient {
        var configuration = ClientConfiguration(baseURL: baseURL, timeout: .hangGuard)
        configure(&configuration)
        return APIClient(configuration: configuration, transport: transport.make())
    }

    /// The absolute URL of `path` (which may carry a query).
    func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString + path)!
    }
}

/// Values of a header field split at commas, since a repeated field may arrive as one line.
func listValues(_ line: String?) -> [String] {
    (line ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
}
