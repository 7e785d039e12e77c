import Crypto
import Foundation
import HTTPCore

/// Basic credentials verified recently, so a page polled every second costs one PBKDF2 hash
/// per user and interval, not one per request. An entry is a keyed hash (HMAC-SHA256 under a
/// random key made for this process and never stored) of the name and password, kept under
/// the name for at most ``timeToLive``; at most ``capacity`` names, the entry closest to
/// expiring going first. Only a success is kept: a wrong password costs its full hash every
/// time. The keyed hash is compared in constant time.
///
/// Sendable: the entries are behind a lock.
final class VerifiedCredentials: Sendable {
    private struct Entry {
        var mac: [UInt8]
        var user: ConsoleUser
        /// When it expires, on the boot clock.
        var expires: Double
    }

    /// How long a verified password is taken without hashing it again.
    let timeToLive: Duration
    /// The most names kept.
    let capacity: Int
    private let key = SymmetricKey(size: .bits256)
    private let entries = LockedBox([String: Entry]())
    private let clock: @Sendable () -> Double

    init(timeToLive: Duration = .seconds(60), capacity: Int = 256, clock: @escaping @Sendable () -> Double = { BootClock.uptime() }) {
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.clock = clock
    }

    /// The user `name` signed in as with `password` when that was verified within the time
    /// to live; otherwise `verify` decides, and a user it returns is kept.
    func user(name: String, password: String, verify: () -> ConsoleUser?) -> ConsoleUser? {
        if let cached = cached(name: name, password: password) { return cached }
        guard let user = verify() else { return nil }
        keep(user, name: name, password: password)
        return user
    }

    /// The user `name` signed in as with `password`, when that was verified within the time
    /// to live; `nil` otherwise (then hash it, and ``keep(_:name:password:)`` a success).
    func cached(name: String, password: String) -> ConsoleUser? {
        let mac = self.mac(name: name, password: password)
        let now = clock()
        return entries.withLock { entries -> ConsoleUser? in
            guard let entry = entries[name], entry.expires > now, constantTimeEqual(entry.mac, mac) else { return nil }
            return entry.user
        }
    }

    /// Keeps `user`, just verified with `name` and `password`, for the time to live.
    func keep(_ user: ConsoleUser, name: String, password: String) {
        let mac = self.mac(name: name, password: password)
        let now = clock()
        let expires = now + timeToLive.seconds
        entries.withLock { entries in
            entries = entries.filter { $0.value.expires > now }
            if entries[name] == nil, entries.count >= capacity, let soonest = entries.min(by: { $0.value.expires < $1.value.expires })?.key {
                entries[soonest] = nil
            }
            entries[name] = Entry(mac: mac, user: user, expires: expires)
        }
    }

    /// How many names are kept now, expired ones included until the next success.
    var count: Int { entries.withLock { $0.count } }

    private func mac(name: String, password: String) -> [UInt8] {
        // The name's length first, so no two (name, password) pairs hash the same bytes.
        var message = Array(String(name.utf8.count).utf8) + [0]
        message += Array(name.utf8)
        message += Array(password.utf8)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }
}
