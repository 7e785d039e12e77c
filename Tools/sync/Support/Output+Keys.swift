import Foundation
import QueueEncryption

/// A keyring as `sync keys` prints it: ids, roles and key-check values, never key bytes.
extension Output {
    /// One key as the one line `sync keys list` prints: id, role, key-check value.
    static func line(_ key: QueueKey, in keyring: Keyring) -> String {
        let role = key.id == keyring.primary.id ? "primary" : "decrypt-only"
        return "\(key.id)  \(role.padding(toLength: 12, withPad: " ", startingAt: 0))  check=\(key.keyCheckValue)"
    }

    /// One key as a JSON object: `id`, `primary`, `key_check_value`.
    static func object(_ key: QueueKey, in keyring: Keyring) -> [String: Any] {
        ["id": key.id.rawValue, "primary": key.id == keyring.primary.id, "key_check_value": key.keyCheckValue]
    }

    /// What `sync keys new` and `sync keys add` print about the key they made in the keyring
    /// at `path`: one line, or with `json` one object.
    static func added(_ keyring: Keyring, path: String, json: Bool, created: Bool) {
        let key = keyring.primary
        if json {
            Output.json([
                "keyring": path, "id": key.id.rawValue, "key_check_value": key.keyCheckValue,
                "keys": keyring.keys.map { object($0, in: keyring) },
            ])
            return
        }
        let others = keyring.keys.count - 1
        print(terminalSafe(created
            ? "created \(path) (mode 0600)"
            : "added a primary key to \(path); \(others) older key\(others == 1 ? " stays" : "s stay"), decrypt-only"))
        print(line(key, in: keyring))
    }
}
