import ArgumentParser
import Foundation
import OfflineQueue
import QueueEncryption

/// `sync keys`: the keyring that seals queued requests at rest (Docs/Encryption.md), and the
/// queue's entries under it.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make, rotate and list a keyring for encryption at rest; see and reseal what the queue holds under it.",
        discussion: """
            A keyring file holds one primary key, which seals, and older keys, which still open \
            what they sealed. It must be private to its owner: mode 0600, not a symbolic link. \
            These commands print key ids and key-check values, never key bytes.

            new, add and list act on the keyring file only. status, rotate and encrypt open the \
            queue (--db): status counts its entries per key and in clear; rotate seals every \
            entry under the keyring's primary key; encrypt seals the entries stored in clear. \
            Every queue command takes --keyring (default: the systemd credential \
            $CREDENTIALS_DIRECTORY/courier-keyring when it exists) and --sealing off|on|required \
            (default $SYNC_SEALING, else on with a keyring).

            Examples:
              sync keys new --keyring /etc/courier/queue.keyring
              sync keys add --keyring /etc/courier/queue.keyring
              sync keys list --keyring /etc/courier/queue.keyring
              sync --json keys list        # under systemd: $CREDENTIALS_DIRECTORY/courier-keyring
              sync keys status --keyring /etc/courier/queue.keyring
              sync keys rotate --keyring /etc/courier/queue.keyring
              sync keys encrypt --keyring /etc/courier/queue.keyring
            """,
        subcommands: [KeysNew.self, KeysAdd.self, KeysList.self, KeysStatus.self, KeysRotate.self, KeysEncrypt.self]
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
        try Runner.emit(KeysListReport(try options.load()), json: options.json)
    }
}

struct KeysStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "How many of the queue's entries each key seals, and how many are in clear.",
        discussion: """
            Needs no keyring. With one (--keyring, or the systemd credential), each key is \
            marked: primary or decrypt-only when the keyring holds it, "not in keyring" when \
            entries are sealed under a key it lacks, "other bytes" when it holds other bytes \
            under a key id the queue recorded. Reads only: --sealing and $SYNC_SEALING do not \
            apply. With --json: {"queue_id", "clear", "sealed": {"ID": N}, "key_checks": \
            {"ID": "VALUE"}, "keyring": null or {"primary", "held", "other_bytes", "missing"}}.

            Examples:
              sync keys status
              sync keys status --keyring /etc/courier/queue.keyring
              sync --json keys status --db /var/lib/courier-sync/queue.db
            """
    )

    @OptionGroup var options: QueueOptions

    func run() async throws {
        let keyring = try options.keys.loadIfFound()
        try await Runner.run(options, QueueAccess(readOnly: true, sealing: .off)) { queue in
            KeysStatusReport(status: try await queue.sealStatus(), keyring: keyring)
        }
    }
}

/// `--batch N`: the entries `rotate` and `encrypt` reseal in one transaction.
struct ResealOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Entries resealed per transaction (1 to 10000).", valueName: "n"))
    var batch = 64

    func validate() throws {
        guard (1...10_000).contains(batch) else { throw ValidationError("--batch must be between 1 and 10000") }
    }

    /// Reseals `scope` under the primary key of the queue command's keyring (`options`), opening
    /// the queue with sealing on whatever `--sealing` says, and prints what was done. Exits 75
    /// when entries are left for a later run: entries skipped, or entries the scope still
    /// holds afterwards (in flight when they were read, or stored meanwhile by a process with
    /// another keyring). `command` names it in messages.
    func reseal(_ scope: QueueSealing.ResealScope, options: QueueOptions, command: String) async throws {
        let keyring = try options.keys.loadRequired(by: "sync keys \(command)")
        let primary = keyring.primary.id.rawValue
        try await Runner.run(options, QueueAccess(sealing: .on(keyring))) { queue in
            let summary = try await queue.reseal(scope, keyring: keyring, batchSize: batch)
            let status = try await queue.sealStatus()
            let remaining = switch scope {
            case .clear: status.clear
            case .otherKeys: status.sealed.filter { $0.key != primary }.values.reduce(0, +)
            }
            return ResealReport(summary: summary, remaining: remaining, keyID: primary, scope: scope, command: command)
        }
    }
}

struct KeysRotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Seal every entry sealed under an older key again, under the keyring's primary key.",
        discussion: """
            Run it after `sync keys add` (and, under systemd, after the service was restarted \
            with the new keyring). The keyring must hold every key the queue's entries are \
            sealed under, with the bytes the queue recorded (else exit 78 and nothing changes). \
            Entries are resealed --batch at a time, each batch one transaction: an interrupted \
            run leaves every entry under its old key or the new one, and running it again \
            finishes. Entries in flight are left alone: it then exits 75 (run it again), as it \
            does when entries are still under other keys afterwards. \
            Opens the queue with sealing on, whatever --sealing says. Prints \
            what it resealed; with --json {"resealed", "skipped", "batches", "remaining", \
            "key_id"}.

            Example:
              sync keys add --keyring /etc/courier/queue.keyring
              sync keys rotate --keyring /etc/courier/queue.keyring
            """
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var resealing: ResealOptions

    func run() async throws {
        try await resealing.reseal(.otherKeys, options: options, command: "rotate")
    }
}

struct KeysEncrypt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Seal the entries stored in clear under the keyring's primary key.",
        discussion: """
            For a queue that held entries before sealing was turned on: afterwards \
            --sealing required (or SYNC_SEALING=required) accepts it. Works on a queue that \
            required mode refuses: it opens the queue with sealing on, whatever --sealing \
            says. Batches, interruptions, exit statuses and output as for `sync keys rotate`.

            Example:
              sync keys encrypt --keyring /etc/courier/queue.keyring
            """
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var resealing: ResealOptions

    func run() async throws {
        try await resealing.reseal(.clear, options: options, command: "encrypt")
    }
}
