import Crypto
import Foundation

/// PBKDF2 with HMAC-SHA256 (RFC 8018), the password hash of a console credentials line:
/// `pbkdf2-sha256$ITERATIONS$SALT$KEY` (salt and key in base64). swift-crypto has HMAC but no
/// PBKDF2, and bcrypt would cost a quarter second on every request of a polling page.
enum PasswordHash {
    static let prefix = "pbkdf2-sha256"

    /// The derived key of `password` under `salt`: one 32-byte block (`dkLen` = the hash size).
    static func derive(password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        let key = SymmetricKey(data: Array(password.utf8))
        var block = salt
        block.append(contentsOf: [0, 0, 0, 1])
        var u = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
        var result = u
        for _ in 1..<max(1, iterations) {
            u = Array(HMAC<SHA256>.authenticationCode(for: u, using: key))
            for index in result.indices { result[index] ^= u[index] }
        }
        return result
    }

    /// A stored hash of `password` with a fresh random salt.
    static func make(password: String, iterations: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let key = derive(password: password, salt: salt, iterations: iterations)
        return "\(prefix)$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// Whether `password` matches `stored`, compared in constant time.
    static func verify(password: String, stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == prefix, let iterations = Int(parts[1]), iterations > 0,
              let salt = Data(base64Encoded: String(parts[2])), let expected = Data(base64Encoded: String(parts[3]))
        else { return false }
        return constantTimeEqual(derive(password: password, salt: Array(salt), iterations: iterations), Array(expected))
    }
}

/// Compares two byte strings in time that depends on their lengths only.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}

/// A bearer token's stored form: `sha256$HEX`. Tokens are long random strings, so one hash
/// without salt or iterations is enough, and it is cheap on every request.
enum TokenHash {
    static let prefix = "sha256"

    static func make(token: String) -> String { "\(prefix)$\(hex(token))" }

    static func hex(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func verify(token: String, stored: String) -> Bool {
        guard stored.hasPrefix(prefix + "$") else { return false }
        return constantTimeEqual(Array(make(token: token).utf8), Array(stored.utf8))
    }
}
