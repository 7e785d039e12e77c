import Crypto
import Foundation

/// Signs the notice an action's redirect carries (`?notice=retried%203%20entries&ns=…`), so
/// that a page shows only notices this console wrote. Without it, a link from anywhere could
/// put a sentence of its choosing in the console's notice box ("session expired, sign in at
/// …"): escaped, so never markup, but still the console's voice. The key is random, made for
/// this process and never stored: after a restart an old notice link shows no notice.
struct NoticeSeal: Sendable {
    private let key = SymmetricKey(size: .bits256)

    /// The query fields of a redirect with `message` as its notice: `notice=…&ns=…`, both
    /// percent-encoded.
    func fields(_ message: String) -> String {
        "notice=\(formEncode(message))&ns=\(signature(message))"
    }

    /// The notice of a request's query, or `""` when it has none or its signature is not this
    /// console's (compared in constant time).
    func notice(in query: [(name: String, value: String)]) -> String {
        guard let message = query.first(where: { $0.name == "notice" })?.value, !message.isEmpty,
            let given = query.first(where: { $0.name == "ns" })?.value, let code = Data(base64URL: given)
        else { return "" }
        return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Data(message.utf8), using: key) ? message : ""
    }

    private func signature(_ message: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key)).base64URL
    }
}

extension Data {
    /// Base64 with `-` and `_` for `+` and `/`, without padding: safe in a query string.
    fileprivate var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    fileprivate init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
