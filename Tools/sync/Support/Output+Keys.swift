import Foundation
import OfflineQueue
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

    /// How a key of `sync keys status` stands with the keyring given: the keyring holds it
    /// (as primary or decrypt-only), holds other bytes under its id, or lacks it.
    private static func role(of id: String, in status: SealStatus, keyring: Keyring) -> String {
        guard let keyID = KeyID(id), let key = keyring[keyID] else { return "not in keyring" }
        if let recorded = status.keyChecks[id], recorded != key.keyCheckValue { return "other bytes" }
        return keyID == keyring.primary.id ? "primary" : "decrypt-only"
    }

    /// What `sync keys status` prints: the queue's id, the entries in clear, then one line per
    /// key id (the queue's and, with a keyring, the keyring's): id, entries sealed under it,
    /// its role in the keyring when one was given, key-check value. With `json` one object.
    static func status(_ status: SealStatus, keyring: Keyring?, json: Bool) {
        let ids = Set(status.sealed.keys).union(status.keyChecks.keys).union(keyring?.keys.map(\.id.rawValue) ?? []).sorted()
        if json {
            var object: [String: Any] = [
                "queue_id": status.queueID.uuidString.lowercased(), "clear": status.clear,
                "sealed": status.sealed, "key_checks": status.keyChecks, "keyring": NSNull(),
            ]
            if let keyring {
                let roles = Dictionary(uniqueKeysWithValues: ids.map { ($0, role(of: $0, in: status, keyring: keyring)) })
                object["keyring"] = [
                    "primary": keyring.primary.id.rawValue,
                    "held": ids.filter { roles[$0] == "primary" || roles[$0] == "decrypt-only" },
                    "other_bytes": ids.filter { roles[$0] == "other bytes" },
                    "missing": ids.filter { roles[$0] == "not in keyring" && (status.sealed[$0] ?? 0) > 0 },
                ]
            }
            Output.json(object)
            return
        }
        let width = String(max(status.clear, status.sealed.values.max() ?? 0)).count
        func count(_ n: Int) -> String { String(repeating: " ", count: width - String(n).count) + String(n) }
        print("queue     \(status.queueID.uuidString.lowercased())")
        print("clear     \(count(status.clear))")
        for id in ids {
            let check = status.keyChecks[id] ?? KeyID(id).flatMap { keyring?[$0]?.keyCheckValue } ?? "-"
            var fields = [id, count(status.sealed[id] ?? 0)]
            if let keyring { fields.append(role(of: id, in: status, keyring: keyring).padding(toLength: 14, withPad: " ", startingAt: 0)) }
            fields.append("check=\(check)")
            print(terminalSafe(fields.joined(separator: "  ")))
        }
    }

    /// What `sync keys rotate` and `encrypt` print: one line, or with `json` one object
    /// `{"resealed", "skipped", "batches", "remaining", "key_id"}`. `remaining`: the entries
    /// still to reseal afterwards.
    static func resealed(_ summary: ResealSummary, remaining: Int, under key: KeyID, json: Bool) {
        if json {
            Output.json([
                "resealed": summary.resealed, "skipped": summary.skipped, "batches": summary.batches, "remaining": remaining,
                "key_id": key.rawValue,
            ])
            return
        }
        func plural(_ n: Int, _ word: String, _ words: String) -> String { "\(n) \(n == 1 ? word : words)" }
        print("resealed \(plural(summary.resealed, "entry", "entries")) under key \(key) in \(plural(summary.batches, "batch", "batches")); \(summary.skipped) skipped, \(remaining) remaining")
    }
}
