import ArgumentParser
import Foundation
import QueueEncryption

/// `sync keys`: the keyring that seals queued requests at rest (Docs/Encryption.md).
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make, rotate and list a keyring for encryption at rest. The queue does not use a keyring yet.",
        discussion: """
            A keyring file holds one primary key, which seals, and older keys, which still open \
            what they sealed. It must be private to its owner: mode 0600, not a symbolic link. \
            These commands print key ids and key-check values, never key bytes.

            Examples:
              sync keys new --keyring /etc/courier/queue.keyring
              sync keys add --keyring /etc/courier/queue.keyring
              sync keys list --keyring /etc/courier/queue.keyring
              sync --json keys list        # under systemd: $CREDENTIALS_DIRECTORY/courier-keyring
            """,
        subcommands: [KeysNew.self, KeysAdd.self, KeysList.self]
    )

    /// `sync keys` without a command: the help, on standard error, and exit 64 (bad usage).
    func run() throws {
        FileHandle.standardError.write(Data((Sync.helpMessage(for: Self.self) + "\n").utf8))
        throw SysExit.usage
    }
}

struct KeysNew: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Create a keyring file holding one new primary key.",
        discussion: """
            The file is created with mode 0600 and never written over: when anything is at the \
            path already, nothing is changed and the command exits 73. Prints the new key's id \
            and key-check value.

            Example:
              sync keys new --keyring /etc/courier/queue.keyring
            """
    )

    @OptionGroup var options: KeyringOptions

    func validate() throws {
        try options.requireFile(for: "new")
    }

    func run() throws {
        try options.write(creating: true, Keyring.create(path:))
    }
}

struct KeysAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a new primary key to a keyring file; the older keys stay, decrypt-only.",
        discussion: """
            The file is checked as for reading, then replaced whole and atomically: a crash \
            leaves the old keyring or the new one. Prints the new key's id and key-check value.

            Example:
              sync keys add --keyring /etc/courier/queue.keyring
            """
    )

    @OptionGroup var options: KeyringOptions

    func validate() throws {
        try options.requireFile(for: "add")
    }

    func run() throws {
        try options.write(creating: false, Keyring.addPrimary(path:))
    }
}

struct KeysList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "One line per key: id, primary or decrypt-only, key-check value.",
        discussion: """
            Keys are listed in the file's order (each `add` appends its key). Without --keyring \
            the keyring is the systemd credential $CREDENTIALS_DIRECTORY/courier-keyring. With \
            --json: an array of {"id", "primary", "key_check_value"}.

            Examples:
              sync keys list --keyring /etc/courier/queue.keyring
              sync --json keys list
            """
    )

    @OptionGroup var options: KeyringOptions

    func validate() throws {
        try options.requireSource()
    }

    func run() throws {
        let keyring = try options.load()
        if options.json {
            Output.json(keyring.keys.map { Output.object($0, in: keyring) })
            return
        }
        for key in keyring.keys { print(Output.line(key, in: keyring)) }
    }
}
