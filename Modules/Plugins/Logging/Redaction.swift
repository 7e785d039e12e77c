public import Foundation
public import HTTPTypes

/// Which secrets never appear in logs and printed output, and how they are hidden.
///
/// ```swift
/// var redaction = Redaction.standard
/// redaction.headers.insert(HTTPField.Name("X-Session")!)
/// redaction.queryParameters.insert("signature")
/// print(redaction.redact(url: url), redaction.redact(headers: fields))
/// ```
public struct Redaction: Sendable, Hashable {
    /// Header fields whose values are replaced.
    public var headers: Set<HTTPField.Name>
    /// Query parameter names (compared without case) whose values are replaced.
    public var queryParameters: Set<String>
    /// What replaces a secret.
    public var placeholder: String

    /// A redaction that hides the values of `headers` and of the `queryParameters` (lowercased,
    /// so matched without case) behind `placeholder`.
    public init(headers: Set<HTTPField.Name>, queryParameters: Set<String>, placeholder: String = "<redacted>") {
        self.headers = headers
        self.queryParameters = Set(queryParameters.map { $0.lowercased() })
        self.placeholder = placeholder
    }

    /// `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie` and the usual API-key
    /// headers; the usual key and token query parameters.
    public static let standard = Redaction(
        headers: [
            .authorization, .proxyAuthorization, .cookie, .setCookie,
            HTTPField.Name("X-API-Key")!, HTTPField.Name("Api-Key")!, HTTPField.Name("X-Auth-Token")!,
        ],
        queryParameters: ["api_key", "apikey", "key", "token", "access_token", "client_secret", "password"]
    )

    /// Whether a header's value is a secret.
    public func isSecret(_ name: HTTPField.Name) -> Bool { headers.contains(name) }

    /// The fields with secret values replaced.
    public func redact(headers fields: HTTPFields) -> HTTPFields {
        var result = HTTPFields()
        for field in fields {
            result.append(HTTPField(name: field.name, value: isSecret(field.name) ? placeholder : field.value))
        }
        return result
    }

    /// `"name: value"` lines with secret values replaced.
    public func describe(headers fields: HTTPFields) -> [String] {
        redact(headers: fields).map { "\($0.name.rawName): \($0.value)" }
    }

    /// The URL with secret query values replaced (user info too).
    public func redact(url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        if components.password != nil { components.password = placeholder }
        return redactQuery(of: components.string ?? url.absoluteString)
    }

    /// A request target or URL string with secret query values replaced.
    public func redactQuery(of target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: mark)...]
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let decoded = (name.removingPercentEncoding ?? name).lowercased()
            guard parts.count == 2, queryParameters.contains(decoded) else { return String(pair) }
            return name + "=" + placeholder
        }
        return String(target[...mark]) + pairs.joined(separator: "&")
    }
}
