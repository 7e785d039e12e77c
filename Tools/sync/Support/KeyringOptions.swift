import ArgumentParser
import Foundation
import QueueEncryption

/// Which keyring the `sync keys new|add|list` commands act on, and how output looks. These
/// never open the queue; `sync keys status|rotate|encrypt` do, and take ``QueueOptions``
/// instead (which holds the same ``KeyringSource``: one `--keyring` per command).
struct KeyringOptions: ParsableArguments {
    @OptionGroup var source: KeyringSource

    @OptionGroup var output: OutputOptions

    /// `--keyring`, as given.
    var keyring: String? { source.keyring }

    /// `--json`, before or after the command name.
    var json: Bool { output.json }

    /// Checks that a command which writes the keyring was given its file: a credential is
    /// read-only, so it never stands in for `--keyring`.
    func requireFile(for command: String) throws {
        guard source.file == nil else { return }
        let credential = KeyringSource.credentialsFolder().map(KeyringSource.credentialPath(in:))
        if let credential, FileManager.default.fileExists(atPath: credential) {
            throw ValidationError("""
                sync keys \(command) needs --keyring FILE: the keyring at \(credential) is a systemd credential, \
                which is read-only. Change the keyring file it is made from, then encrypt it again (systemd-creds encrypt).
                """)
        }
        throw ValidationError("sync keys \(command) needs --keyring FILE")
    }

    /// Checks that a command which reads the keyring has one: `--keyring`, or the credential.
    func requireSource() throws {
        guard source.file == nil, KeyringSource.credentialsFolder() == nil else { return }
        throw ValidationError(KeyringSource.howToGive)
    }

    /// Changes the keyring file `--keyring` names (`requireFile(for:)` has checked that there
    /// is one) with `change`, and prints the key it added. `creating`: `change` makes the file.
    /// Says what went wrong and throws an exit status on failure.
    func write(creating: Bool, _ change: (String) throws(SealError) -> Keyring) throws {
        let path = source.file ?? ""
        let keyring = try reporting(keyring: path, creating: creating) { () throws(SealError) in try change(path) }
        try Runner.emit(KeyAddedReport(keyring, path: path, created: creating), json: json)
    }

    /// Reads the keyring from `--keyring`, else from the credential. Says what went wrong and
    /// throws an exit status on failure.
    func load() throws -> Keyring { try source.load() }
}
