public import Foundation
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

    /// Mounts a tmpfs of `size` at a new folder `name` in `parent`.
    public init(under parent: URL, named name: String = "small", size: String) throws {
        let path = parent.appendingPathComponent(name).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try self.init(at: path, size: size)
    }

    /// Writes to the file `name` (after what it holds already) until no block is left.
    public func fill(_ name: String = "filler") throws {
        let file = path + "/" + name
        if !FileManager.default.fileExists(atPath: file) { _ = FileManager.default.createFile(atPath: file, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        defer { try? handle.close() }
        try handle.seekToEnd()
        let block = Data(count: 4096)
        while (try? handle.write(contentsOf: block)) != nil {}
    }

    /// Unmounts it (lazily, so an open file does not keep it).
    public func unmount() {
        _ = umount2(path, Int32(MNT_DETACH))
    }
}
