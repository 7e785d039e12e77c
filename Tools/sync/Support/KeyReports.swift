import Foundation
import OfflineQueue
import QueueEncryption

/// A keyring as `sync keys` prints it: ids, roles and key-check values, never key bytes.
struct KeyReport: Encodable {
    var id: String
    var primary: Bool
    var keyCheckValue: String

    enum CodingKeys: String, CodingKey {
        case id, primary, keyCheckValue = "key_check_value"
    }

    init(_ key: QueueKey, in keyring: Keyring) {
        id = key.id.rawValue
        primary = key.id == keyring.primary.id
        keyCheckValue = key.keyCheckValue
    }

    /// The key as the one line `sync keys list` prints: id, role, key-check value.
    var line: String {
        let role = primary ? "primary" : "decrypt-only"
        return "\(id)  \(role.padding(toLength: 12, withPad: " ", startingAt: 0))  check=\(keyCheckValue)"
    }
}

/// What `sync keys list` prints: one key a line, or an array of ``KeyReport``.
struct KeysListReport: Report {
    var keys: [KeyReport]

    init(_ keyring: Keyring) {
        keys = keyring.keys.map { KeyReport($0, in: keyring) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(keys)
    }

    func printText() {
        for key in keys { print(key.line) }
    }
}

/// What `sync keys new` and `sync keys add` print about the key they made in the keyring at
/// `keyring`: the keyring, the new key's id and check value, and every key.
struct KeyAddedReport: Report {
    var keyring: String
    var id: String
    var keyCheckValue: String
    var keys: [KeyReport]
    /// Whether the keyring file was made (`new`) rather than added to (`add`).
    var created: Bool

    enum CodingKeys: String, CodingKey {
        case keyring, id, keys, keyCheckValue = "key_check_value"
    }

    init(_ keyring: Keyring, path: String, created: Bool) {
        self.keyring = path
        id = keyring.primary.id.rawValue
        keyCheckValue = keyring.primary.keyCheckValue
        keys = keyring.keys.map { KeyReport($0, in: keyring) }
        self.created = created
    }

    func printText() {
        let others = keys.count - 1
        print(Output.terminalSafe(created
            ? "created \(keyring) (mode 0600)"
            : "added a primary key to \(keyring); \(others) older key\(others == 1 ? " stays" : "s stay"), decrypt-only"))
        if let primary = keys.first(where: \.primary) { print(primary.line) }
    }
}

/// What `sync keys status` prints: the queue's id, the entries in clear, the entries sealed
/// under each key id and the check values the queue recorded; with a keyring, how each key
/// stands with it.
struct KeysStatusReport: Report {
    var status: QueueSealing.Status
    var keyring: Keyring?

    /// How the keyring given stands with the queue's keys.
    struct Roles: Encodable {
        var primary: String
        var held: [String]
        var otherBytes: [String]
        var missing: [String]

        enum CodingKeys: String, CodingKey {
            case primary, held, missing, otherBytes = "other_bytes"
        }
    }

    enum CodingKeys: String, CodingKey {
        case clear, sealed, keyring, queueID = "queue_id", keyChecks = "key_checks"
    }

    /// Every key id: the queue's and, with a keyring, the keyring's.
    var ids: [String] {
        Set(status.sealed.keys).union(status.keyChecks.keys).union(keyring?.keys.map(\.id.rawValue) ?? []).sorted()
    }

    /// How key `id` stands with `keyring`: the keyring holds it (as primary or decrypt-only),
    /// holds other bytes under its id, or lacks it.
    func role(of id: String, in keyring: Keyring) -> String {
        guard let keyID = KeyID(id), let key = keyring[keyID] else { return "not in keyring" }
        if let recorded = status.keyChecks[id], recorded != key.keyCheckValue { return "other bytes" }
        return keyID == keyring.primary.id ? "primary" : "decrypt-only"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status.queueID.uuidString.lowercased(), forKey: .queueID)
        try container.encode(status.clear, forKey: .clear)
        try container.encode(status.sealed, forKey: .sealed)
        try container.encode(status.keyChecks, forKey: .keyChecks)
        let roles = keyring.map { keyring in
            let ids = self.ids
            let role = Dictionary(uniqueKeysWithValues: ids.map { ($0, self.role(of: $0, in: keyring)) })
            return Roles(
                primary: keyring.primary.id.rawValue,
                held: ids.filter { role[$0] == "primary" || role[$0] == "decrypt-only" },
                otherBytes: ids.filter { role[$0] == "other bytes" },
                missing: ids.filter { role[$0] == "not in keyring" && (status.sealed[$0] ?? 0) > 0 }
            )
        }
        try container.encode(roles, forKey: .keyring)
    }

    func printText() {
        let width = String(max(status.clear, status.sealed.values.max() ?? 0)).count
        func count(_ n: Int) -> String { String(repeating: " ", count: width - String(n).count) + String(n) }
        print("queue     \(status.queueID.uuidString.lowercased())")
        print("clear     \(count(status.clear))")
        for id in ids {
            let check = status.keyChecks[id] ?? KeyID(id).flatMap { keyring?[$0]?.keyCheckValue } ?? "-"
            var fields = [id, count(status.sealed[id] ?? 0)]
            if let keyring { fields.append(role(of: id, in: keyring).padding(toLength: 14, withPad: " ", startingAt: 0)) }
            fields.append("check=\(check)")
            print(Output.terminalSafe(fields.joined(separator: "  ")))
        }
    }
}

/// What `sync keys rotate` and `encrypt` print: the entries resealed and skipped, in how many
/// batches, the entries still to reseal afterwards (`remaining`), and the key they are sealed
/// under. Entries left make it exit 75.
struct ResealReport: Report {
    var summary: QueueSealing.ResealSummary
    var remaining: Int
    var keyID: String
    /// The entries it reseals: in clear (`encrypt`) or under other keys (`rotate`).
    var scope: QueueSealing.ResealScope
    /// `rotate` or `encrypt`, for messages.
    var command: String

    enum CodingKeys: String, CodingKey {
        case resealed, skipped, batches, remaining, keyID = "key_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(summary.resealed, forKey: .resealed)
        try container.encode(summary.skipped, forKey: .skipped)
        try container.encode(summary.batches, forKey: .batches)
        try container.encode(remaining, forKey: .remaining)
        try container.encode(keyID, forKey: .keyID)
    }

    func printText() {
        func plural(_ n: Int, _ word: String, _ words: String) -> String { "\(n) \(n == 1 ? word : words)" }
        print("resealed \(plural(summary.resealed, "entry", "entries")) under key \(keyID) in \(plural(summary.batches, "batch", "batches")); \(summary.skipped) skipped, \(remaining) remaining")
    }

    func finish() throws {
        guard summary.skipped == 0 && remaining == 0 else {
            let left = scope == .clear ? "in clear" : "under other keys"
            let count = remaining > 0 ? remaining : summary.skipped
            let entries = count == 1 ? "1 entry is" : "\(count) entries are"
            complain("""
                \(entries) still \(left) (in flight while this ran, or stored meanwhile by a process with \
                another keyring): run sync keys \(command) again
                """)
            throw SysExit.tryAgain
        }
    }
}
