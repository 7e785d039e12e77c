public import Foundation

/// An RFC 9457 problem details object (`application/problem+json`).
///
/// The standard members are typed; every other member is an extension member, kept as raw
/// ``JSONValue``. A standard member of the wrong JSON type is ignored, as RFC 9457 §3.1 asks.
///
/// ```json
/// {"type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.",
///  "status": 403, "detail": "Your balance is 30, but that costs 50.",
///  "instance": "/account/12345/msgs/abc", "balance": 30, "accounts": ["/account/12345"]}
/// ```
/// ```swift
/// let problem = try JSONDecoder().decode(ProblemDetails.self, from: data)
/// problem.type                                  // "https://example.com/probs/out-of-credit"
/// problem[extension: "balance"]?.intValue       // 30
/// ```
public struct ProblemDetails: Sendable, Hashable, Codable {
    /// A URI reference naming the problem type; `about:blank` when absent.
    public var type: String
    /// A short summary of the problem type.
    public var title: String?
    /// The HTTP status the server generated for this occurrence.
    public var status: Int?
    /// An explanation of this occurrence.
    public var detail: String?
    /// A URI reference naming this occurrence.
    public var instance: String?
    /// Every other member, as it was sent.
    public var extensions: [String: JSONValue]

    /// A problem details object.
    public init(type: String = "about:blank", title: String? = nil, status: Int? = nil, detail: String? = nil, instance: String? = nil, extensions: [String: JSONValue] = [:]) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.extensions = extensions
    }

    /// The extension member `name`.
    public subscript(extension name: String) -> JSONValue? { extensions[name] }

    /// The extension member `name` decoded as `type`; `nil` when there is no such member.
    public func extensionMember<T: Decodable>(_ name: String, as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T? {
        try extensions[name].map { try $0.decode(as: type, decoder: decoder) }
    }

    private static let standardMembers: Set<String> = ["type", "title", "status", "detail", "instance"]

    /// Decodes a problem details object, keeping unknown members as extensions.
    public init(from decoder: any Decoder) throws {
        let members = try decoder.singleValueContainer().decode([String: JSONValue].self)
        self.init(
            type: members["type"]?.stringValue ?? "about:blank",
            title: members["title"]?.stringValue,
            status: members["status"]?.intValue,
            detail: members["detail"]?.stringValue,
            instance: members["instance"]?.stringValue,
            extensions: members.filter { !Self.standardMembers.contains($0.key) }
        )
    }

    /// Encodes the standard members and the extension members side by side.
    public func encode(to encoder: any Encoder) throws {
        var members = extensions
        members["type"] = .string(type)
        if let title { members["title"] = .string(title) }
        if let status { members["status"] = .integer(Int64(status)) }
        if let detail { members["detail"] = .string(detail) }
        if let instance { members["instance"] = .string(instance) }
        var container = encoder.singleValueContainer()
        try container.encode(members)
    }
}
