import Foundation
@testable import QueueEncryption
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh private folder under the system's temporary folder, removed after `body`.
func withTemporaryFolder<T>(_ body: (String) throws -> T) throws -> T {
    let path = NSTemporaryDirectory() + "courier-seal-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// The file's permission bits, from `lstat`.
func mode(of path: String) -> UInt32 {
    var info = stat()
    precondition(lstat(path, &info) == 0, "lstat \(path)")
    return UInt32(info.st_mode) & 0o7777
}

func setMode(_ path: String, _ mode: UInt32) {
    precondition(chmod(path, mode_t(mode)) == 0, "chmod \(path)")
}

/// Writes `text` to `path` with `mode`, as a user would with an editor and chmod.
func writeFile(_ path: String, _ text: String, mode: UInt32 = 0o600) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    setMode(path, mode)
}

/// A deterministic plaintext of `count` bytes.
func pattern(_ count: Int, seed: UInt8 = 0) -> Data {
    // Byte i depends on i % 256 alone: copies of one period, not a `map` over every byte,
    // which a debug build runs at hundreds of nanoseconds a byte on the cooperative pool.
    let period = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    var data = Data(capacity: count)
    while data.count < count { data.append(contentsOf: period.prefix(count - data.count)) }
    return data
}

/// A cipher with a fresh keyring, queue and entry.
func makeCipher(idempotencyKey: String = "entry-1") -> (Keyring, UUID, EntryCipher) {
    let keyring = Keyring.generate(), queue = UUID()
    return (keyring, queue, EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: idempotencyKey))
}

/// Splits `data` into pieces of `size` bytes (the last may be shorter).
func pieces(_ data: Data, size: Int) -> [Data] {
    stride(from: 0, to: data.count, by: size).map { data.subdata(in: $0..<min($0 + size, data.count)) }
}

/// What `body` throws, as a `SealError` (nil when it throws nothing or something else).
func sealError(_ body: () throws -> Void) -> SealError? {
    do {
        try body()
        return nil
    } catch {
        return error as? SealError
    }
}
