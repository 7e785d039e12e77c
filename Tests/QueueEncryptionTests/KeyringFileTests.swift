import Foundation
import Testing
@testable import QueueEncryption
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct KeyringFileTests {
    @Test func createWritesAPrivateFileThatLoads() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            let created = try Keyring.create(path: path)
            #expect(mode(of: path) == 0o600)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasPrefix("courier-keyring v1\n"))
            #expect(text.contains("\(created.primary.id) \(created.primary.base64) primary\n"))
            let loaded = try Keyring.load(path: path)
            #expect(loaded.primary.id == created.primary.id)
            #expect(loaded.primary.keyCheckValue == created.primary.keyCheckValue)
        }
    }

    @Test func createNeverWritesOverAFileOrThroughALink() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            try writeFile(path, "precious")
            #expect(sealError { _ = try Keyring.create(path: path) } == .keyringExists(path: path))
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
            let link = folder + "/link.keyring"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: folder + "/elsewhere")
            #expect(sealError { _ = try Keyring.create(path: link) } == .keyringExists(path: link))
            #expect(!FileManager.default.fileExists(atPath: folder + "/elsewhere"))
        }
    }

    @Test func addPrimaryRotatesInPlaceAtomically() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            let first = try Keyring.create(path: path)
            let before = inode(path)
            let rotated = try Keyring.addPrimary(path: path)
            #expect(rotated.keys.count == 2)
            #expect(rotated.primary.id != first.primary.id)
            #expect(rotated[first.primary.id]?.keyCheckValue == first.primary.keyCheckValue)
            #expect(mode(of: path) == 0o600)
            #expect(inode(path) != before)
            let loaded = try Keyring.load(path: path)
            #expect(loaded.primary.id == rotated.primary.id)
            #expect(loaded.keys.map(\.id) == [first.primary.id, rotated.primary.id])
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["queue.keyring"])
        }
    }

    /// Rotations racing on one file each keep their key: none is lost to another's rewrite.
    @Test func concurrentRotationsLoseNoKey() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            let failures = Counter()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                for _ in 0..<5 where (try? Keyring.addPrimary(path: path)) == nil { failures.increment() }
            }
            #expect(failures.value == 0)
            #expect(try Keyring.load(path: path).keys.count == 21)
        }
    }

    @Test func addPrimaryRefusesAnUnsafeFile() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            setMode(path, 0o644)
            #expect(sealError { _ = try Keyring.addPrimary(path: path) }?.kind == .unsafeKeyring)
            #expect(try Keyring(parsing: String(contentsOfFile: path, encoding: .utf8), source: path).keys.count == 1)
        }
    }

    @Test(arguments: [0o640, 0o604, 0o620, 0o602, 0o660, 0o644, 0o666, 0o610])
    func refusesFilesOpenToOthers(mode bits: Int) throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            setMode(path, UInt32(bits))
            let error = sealError { _ = try Keyring.load(path: path) }
            #expect(error?.kind == .unsafeKeyring)
            #expect(error?.path == path)
            #expect(error?.mode == UInt32(bits))
            #expect(error?.description.contains(path) == true)
            #expect(error?.description.contains("mode \(String(bits, radix: 8))") == true, "\(error?.description ?? "")")
        }
    }

    @Test(arguments: [0o600, 0o400, 0o700])
    func acceptsPrivateFiles(mode bits: Int) throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            setMode(path, UInt32(bits))
            #expect(throws: Never.self) { _ = try Keyring.load(path: path) }
        }
    }

    @Test func refusesSymbolicLinksAndOtherFiles() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            let link = folder + "/link.keyring"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
            let linked = sealError { _ = try Keyring.load(path: link) }
            #expect(linked?.kind == .unsafeKeyring)
            #expect(linked?.reason == "it is a symbolic link")
            #expect(sealError { _ = try Keyring.addPrimary(path: link) }?.kind == .unsafeKeyring)

            let fifo = folder + "/fifo.keyring"
            #expect(mkfifo(fifo, 0o600) == 0)
            #expect(sealError { _ = try Keyring.load(path: fifo) }?.reason == "it is not a regular file")
            #expect(sealError { _ = try Keyring.load(path: folder) }?.kind == .unsafeKeyring)
            #expect(sealError { _ = try Keyring.load(path: folder + "/missing") }?.kind == .keyringIO)
        }
    }

    @Test func refusesAFileOwnedByAnotherUser() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            guard geteuid() == 0 else { return }  // only root can give a file away
            #expect(chown(path, 65534, 65534) == 0)
            let error = sealError { _ = try Keyring.load(path: path) }
            #expect(error?.kind == .unsafeKeyring)
            #expect(error?.reason?.contains("owned by uid 65534") == true)
        }
    }

    /// systemd's credentials are root's, mode 0400, with an ACL entry letting the service's
    /// user read: `stat` shows the ACL's mask in the group bits (0440). Accepted when the
    /// entry names this user; refused when it names another one or lets the group in.
    @Test func acceptsTheACLSystemdGrantsAndNoOther() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            _ = try Keyring.create(path: path)
            setMode(path, 0o400)
            let me = UInt32(geteuid())
            guard setACL(path, [(0x01, 4, .max), (0x02, 4, me), (0x04, 0, .max), (0x10, 4, .max), (0x20, 0, .max)]) else { return }
            #expect(mode(of: path) == 0o440)
            #expect(throws: Never.self) { _ = try Keyring.load(path: path) }

            #expect(setACL(path, [(0x01, 4, .max), (0x02, 4, me &+ 1), (0x04, 0, .max), (0x10, 4, .max), (0x20, 0, .max)]))
            #expect(sealError { _ = try Keyring.load(path: path) }?.reason?.contains("lets user \(me &+ 1) read") == true)
            #expect(setACL(path, [(0x01, 4, .max), (0x02, 4, me), (0x04, 4, .max), (0x10, 4, .max), (0x20, 0, .max)]))
            #expect(sealError { _ = try Keyring.load(path: path) }?.kind == .unsafeKeyring)
            #expect(setACL(path, [(0x01, 4, .max), (0x04, 0, .max), (0x08, 4, 100), (0x10, 4, .max), (0x20, 0, .max)]))
            #expect(sealError { _ = try Keyring.load(path: path) }?.reason?.contains("lets group 100 read") == true)
        }
    }

    @Test func loadsFromSystemdCredentials() throws {
        try withTemporaryFolder { folder in
            let created = try Keyring.create(path: folder + "/courier-queue")
            setMode(folder + "/courier-queue", 0o400)
            let environment = ["CREDENTIALS_DIRECTORY": folder]
            let loaded = try Keyring.loadCredential(named: "courier-queue", environment: environment)
            #expect(loaded.primary.keyCheckValue == created.primary.keyCheckValue)

            let missing = sealError { _ = try Keyring.loadCredential(named: "other", environment: environment) }
            #expect(missing?.kind == .missingCredential)
            #expect(missing?.path == folder + "/other")
            #expect(sealError { _ = try Keyring.loadCredential(named: "courier-queue", environment: [:]) }?.kind == .missingCredential)
            #expect(sealError { _ = try Keyring.loadCredential(named: "../etc", environment: environment) }?.kind == .missingCredential)

            setMode(folder + "/courier-queue", 0o444)
            let unsafe = sealError { _ = try Keyring.loadCredential(named: "courier-queue", environment: environment) }
            #expect(unsafe?.kind == .unsafeKeyring)
            #expect(unsafe?.path == folder + "/courier-queue")
        }
    }

    @Test func malformedFileNamesItsPathAndLine() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/queue.keyring"
            try writeFile(path, "courier-keyring v1\n# fine\nnot a key line at all\n")
            let error = sealError { _ = try Keyring.load(path: path) }
            #expect(error?.kind == .malformedKeyring)
            #expect(error?.description.hasPrefix("\(path), line 3: ") == true)
        }
    }

    func inode(_ path: String) -> UInt64 {
        var info = stat()
        precondition(lstat(path, &info) == 0)
        return UInt64(info.st_ino)
    }

    /// Sets the file's POSIX access ACL from (tag, permissions, id) entries; false where the
    /// file system has no ACLs.
    func setACL(_ path: String, _ entries: [(UInt16, UInt16, UInt32)]) -> Bool {
        #if os(Linux)
        var bytes = withUnsafeBytes(of: UInt32(2).littleEndian, Array.init)
        for (tag, permissions, id) in entries {
            bytes += withUnsafeBytes(of: tag.littleEndian, Array.init)
            bytes += withUnsafeBytes(of: permissions.littleEndian, Array.init)
            bytes += withUnsafeBytes(of: id.littleEndian, Array.init)
        }
        typealias SetXAttr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
        guard let setxattr = KeyringFile.libcFunction("setxattr", as: SetXAttr.self) else { return false }
        return bytes.withUnsafeBytes { setxattr(path, "system.posix_acl_access", $0.baseAddress, $0.count, 0) } == 0
        #else
        return false
        #endif
    }
}

/// A count shared by threads.
final class Counter: @unchecked Sendable {
    // Every access to `count` holds `lock`.
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
