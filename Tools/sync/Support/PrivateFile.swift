import ArgumentParser
import Foundation
import QueueEncryption
#if canImport(Glibc)
import Glibc
#endif

/// The text of the file at `path` (`what` names it in messages, "credentials file"), refused unless it is a regular file private
/// to this user (or root's with an ACL that gives this user alone access, as systemd's
/// credentials are): the keyring's rule, ``KeyringFile/unsafeReason(_:descriptor:)``.
func readPrivateFile(_ path: String, what: String) throws -> String {
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else {
        let code = errno
        if code == ELOOP {
            complain("refusing the \(what) \(path): it is a symbolic link")
            throw SysExit.unsafeConfiguration
        }
        complain("cannot read the \(what) \(path): \(String(cString: strerror(code)))")
        throw SysExit.ioError
    }
    let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    var info = stat()
    guard fstat(fd, &info) == 0 else {
        complain("cannot read the \(what) \(path): \(String(cString: strerror(errno)))")
        throw SysExit.ioError
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
        complain("refusing the \(what) \(path): it is not a regular file")
        throw SysExit.unsafeConfiguration
    }
    if let reason = KeyringFile.unsafeReason(info, descriptor: fd) {
        complain("refusing the \(what) \(path): \(reason) (mode \(String(info.st_mode & 0o777, radix: 8)))")
        throw SysExit.unsafeConfiguration
    }
    do {
        let data = try handle.readToEnd() ?? Data()
        guard let text = String(data: data, encoding: .utf8) else {
            complain("\(path): the \(what) is not UTF-8 text")
            throw SysExit.dataError
        }
        return text
    } catch let exit as ExitCode {
        throw exit
    } catch {
        complain("cannot read the \(what) \(path): \((error as NSError).localizedDescription)")
        throw SysExit.ioError
    }
}
