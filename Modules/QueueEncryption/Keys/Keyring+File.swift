public import Foundation

/// Keyring files: loading with the safety checks, creating, and rotating in place.
///
/// A keyring file must be a regular file (not a symbolic link), owned by the user reading it
/// or by root, and private: no permission bits for other users, none for its group (a POSIX
/// ACL may grant the reading user alone, as systemd's credentials do). Anything else is
/// refused with `unsafeKeyring`, naming the path and its mode.
extension Keyring {
    /// The keyring in the file at `path`.
    ///
    /// Throws `unsafeKeyring` for a file that is not private (see above), `malformedKeyring`
    /// for text that is not a keyring, `keyringIO` when it cannot be read.
    public static func load(path: String) throws(SealError) -> Keyring {
        let fd = try KeyringFile.openChecked(path)
        defer { close(fd) }
        return try Keyring(parsing: KeyringFile.read(fd, path: path), source: path)
    }

    /// The keyring in systemd's credential `name`: the file `$CREDENTIALS_DIRECTORY/name` that
    /// `LoadCredential=` or `LoadCredentialEncrypted=` gives a service, checked as a file given
    /// by path is.
    ///
    /// Throws `missingCredential` when the variable is not set in `environment` or the folder
    /// holds no such credential, and when `name` is not a plain file name.
    public static func loadCredential(
        named name: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SealError) -> Keyring {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw .missingCredential(path: name, reason: "a credential's name is a plain file name")
        }
        guard let folder = environment["CREDENTIALS_DIRECTORY"], !folder.isEmpty else {
            throw .missingCredential(path: name, reason: "$CREDENTIALS_DIRECTORY is not set: is the service started with LoadCredential= or LoadCredentialEncrypted=?")
        }
        let path = URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(name).path
        guard KeyringFile.exists(path) else {
            throw .missingCredential(path: path, reason: "the service has no credential of this name")
        }
        return try load(path: path)
    }

    /// Creates a keyring file at `path` holding one new random primary key, and returns it.
    ///
    /// The file is created with mode 0600 from the start (`O_EXCL | O_NOFOLLOW`), written,
    /// and flushed with its folder. Throws `keyringExists` when anything is at `path` already:
    /// an existing keyring is never overwritten.
    public static func create(path: String) throws(SealError) -> Keyring {
        let keyring = Keyring.generate()
        try KeyringFile.create(path, text: keyring.fileText())
        return keyring
    }

    /// Adds a new random primary key to the keyring file at `path` (the old primary stays,
    /// decrypt-only) and returns the new keyring.
    ///
    /// The file is checked as by ``load(path:)`` and replaced atomically: a new 0600 file in
    /// the same folder, flushed, renamed over the old one, and the folder flushed, so a crash
    /// leaves either keyring whole. Concurrent calls on one file are serialized by a lock on
    /// it, and each adds its key.
    public static func addPrimary(path: String) throws(SealError) -> Keyring {
        try KeyringFile.withLock(path) { fd throws(SealError) in
            var keyring = try Keyring(parsing: KeyringFile.read(fd, path: path), source: path)
            keyring.addPrimary()
            try KeyringFile.replace(path, text: keyring.fileText())
            return keyring
        }
    }
}
