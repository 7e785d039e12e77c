import ArgumentParser
import Foundation
import QueueEncryption
#if canImport(Glibc)
import Glibc
#endif

/// `--keyring FILE`: where the keyring comes from. One option group shared by the queue
/// commands (through ``QueueOptions``) and the `sync keys` commands (through
/// ``KeyringOptions``), so each command has one `--keyring`, before or after its name:
/// swift-argument-parser decodes a group once, in `Sync` (through `QueueOptions`), and hands
/// that value to every later command that declares it (see ``OutputOptions``).
struct KeyringSource: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The keyring file (private: mode 0600, not a symbolic link). Default: the systemd credential $CREDENTIALS_DIRECTORY/courier-keyring when it exists; `sync keys new` and `add` always need the file.",
        valueName: "file"
    ))
    var keyring: String?

    /// The systemd credential a service's keyring comes in (`LoadCredentialEncrypted=courier-keyring:…`).
    static let credentialName = "courier-keyring"

    /// `$CREDENTIALS_DIRECTORY`, when systemd set it.
    static func credentialsFolder(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The path of the credential holding the keyring, whether or not it exists.
    static func credentialPath(in folder: String) -> String {
        URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(credentialName).path
    }

    /// The credential's path when systemd passed one (anything at the path, even a link, which
    /// loading then refuses), else `nil`.
    static func existingCredential(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let folder = credentialsFolder(environment) else { return nil }
        let path = credentialPath(in: folder)
        var info = stat()
        return lstat(path, &info) == 0 ? path : nil
    }

    /// `--keyring`, when given and not empty.
    var file: String? { keyring.flatMap { $0.isEmpty ? nil : $0 } }

    /// Whether a queue command has a keyring: `--keyring`, or the credential when it exists.
    var isFound: Bool { file != nil || Self.existingCredential() != nil }

    /// Reads the keyring from `--keyring`, else from the credential. Says what went wrong and
    /// throws an exit status on failure (the statuses of `sync keys`: 66 missing, 78 unsafe…).
    func load() throws -> Keyring {
        if let file {
            return try reporting(keyring: file) { () throws(SealError) in try Keyring.load(path: file) }
        }
        let path = Self.credentialPath(in: Self.credentialsFolder() ?? "")
        return try reporting(keyring: path) { () throws(SealError) in try Keyring.loadCredential(named: Self.credentialName) }
    }

    /// The keyring of a queue command: `--keyring`, else the credential when it exists, else
    /// `nil`. Load failures as for ``load()``.
    func loadIfFound() throws -> Keyring? {
        isFound ? try load() : nil
    }

    /// The keyring of a queue command that cannot do without one (`sync keys rotate`,
    /// `encrypt`): exit 64 with what to give when there is none.
    func loadRequired(by command: String) throws -> Keyring {
        guard isFound else {
            complain("\(command) needs a keyring: \(Self.howToGive)")
            throw SysExit.usage
        }
        return try load()
    }

    /// The two ways to give a keyring, for messages.
    static let howToGive = """
        give --keyring FILE, or run under systemd with the credential \(credentialName) \
        (LoadCredentialEncrypted=\(credentialName):PATH), which sets $CREDENTIALS_DIRECTORY
        """
}
