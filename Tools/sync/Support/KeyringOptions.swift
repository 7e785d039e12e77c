import ArgumentParser
import Foundation
import QueueEncryption

/// Which keyring the `sync keys` commands act on, and how output looks.
struct KeyringOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The keyring file. `sync keys list` reads $CREDENTIALS_DIRECTORY/courier-keyring (a systemd credential) when it is not given.",
        valueName: "file"
    ))
    var keyring: String?

    @OptionGroup var output: OutputOptions

    /// `--json`, before or after the command name.
    var json: Bool { output.json }

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

    /// Checks that a command which writes the keyring was given its file: a credential is
    /// read-only, so it never stands in for `--keyring`.
    func requireFile(for command: String) throws {
        guard keyring?.isEmpty ?? true else { return }
        let credential = Self.credentialsFolder().map(Self.credentialPath(in:))
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
        guard keyring?.isEmpty ?? true, Self.credentialsFolder() == nil else { return }
        throw ValidationError("""
            give --keyring FILE, or run under systemd with the credential \(Self.credentialName) \
            (LoadCredentialEncrypted=\(Self.credentialName):PATH), which sets $CREDENTIALS_DIRECTORY
            """)
    }

    /// Changes the keyring file `--keyring` names (`requireFile(for:)` has checked that there
    /// is one) with `change`, and prints the key it added. `creating`: `change` makes the file.
    /// Says what went wrong and throws an exit status on failure.
    func write(creating: Bool, _ change: (String) throws(SealError) -> Keyring) throws {
        let path = keyring ?? ""
        let keyring = try reporting(keyring: path, creating: creating) { () throws(SealError) in try change(path) }
        Output.added(keyring, path: path, json: json, created: creating)
    }

    /// Reads the keyring from `--keyring`, else from the credential. Says what went wrong and
    /// throws an exit status on failure.
    func load() throws -> Keyring {
        if let keyring, !keyring.isEmpty {
            return try reporting(keyring: keyring) { () throws(SealError) in try Keyring.load(path: keyring) }
        }
        let path = Self.credentialPath(in: Self.credentialsFolder() ?? "")
        return try reporting(keyring: path) { () throws(SealError) in try Keyring.loadCredential(named: Self.credentialName) }
    }
}
