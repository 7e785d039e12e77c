import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs mounted for one test (a full or read-only disk), through the `mount(2)`
/// system call: no child process to wait for. Needs root.
public struct Tmpfs: Sendable {
    /// Where it is mounted.
    public let path: String

    /// Mounts a tmpfs of `size` (`"1m"`) at `path`, an existing folder.
    public init(at path: String, size: String, readOnly: Bool = false) throws {
        let flags: UInt = readOnly ? UInt(MS_RDONLY) : 0
        guard mount("tmpfs", path, "tmpfs", flags, "size=\(size)") == 0 else {
            throw TestServerError("mount tmpfs at \(path) failed (these tests need root): \(String(cString: strerror(errno)))")
        }
        self.path = path
    }

    /// Unmounts it (lazily, so an open file does not keep it).
    public func unmount() {
        _ = umount2(path, Int32(MNT_DETACH))
    }
}
