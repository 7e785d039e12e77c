// `sync`: drain and inspect Courier's offline queue from a shell, or run background sync as a
// Linux service. Documented in Docs/sync.md.
import ArgumentParser
import Foundation

@main
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: invokedName,
        abstract: "Drain and inspect Courier's offline request queue, or run background sync as a service.",
        discussion: """
            The queue is a SQLite file (--db PATH, the default) or a PostgreSQL database shared by \
            a fleet (--db postgres://user@host/db?schema=name). Requests stored in it are sent, with \
            backoff, when the network is there; `sync run` does that continuously under systemd.

            Examples:
              sync demo
              sync enqueue POST https://api.example.com/events -H 'Content-Type: application/json' --data '{"kind":"click"}'
              sync drain --concurrency 16
              sync list --state pending --limit 20
              sync wait 42 --timeout 60
              sync --json stats
              sync retry --group user-42 --status 5xx --dry-run
              sync pause --group user-42
              sync list --format csv > queue.csv
              SYNC_DB=/var/lib/myapp/queue.db sync run --probe-url https://api.example.com/health
              sync keys new --keyring /etc/courier/queue.keyring
              sync drain --keyring /etc/courier/queue.keyring

            Encryption at rest: every command that opens the queue takes --keyring FILE \
            (default: the systemd credential $CREDENTIALS_DIRECTORY/courier-keyring when it \
            exists) and --sealing off|on|required (default: $SYNC_SEALING, else on with a \
            keyring, off without). See `sync keys --help`.

            Exit codes (sysexits.h): 0 done, 64 bad usage (--sealing on or required without a \
            keyring, a console on a non-loopback address without users), 65 bad data (invalid URL or method, secret header, corrupt database, \
            malformed keyring, a sealed entry that does not authenticate, a malformed console credentials file), 66 no such database, \
            keyring or file, 69 the PostgreSQL server cannot be reached or refuses the login, 71 cannot listen on the --metrics-address, --console or --address, 73 cannot create the \
            database or keyring, 74 I/O error (disk full), 75 entries remain (try again later), \
            78 unsafe keyring (open to other users, a symbolic link), a keyring that does not \
            fit the queue (a key missing or with other bytes; entries in clear under required), \
            or OTEL_* variables asking for a span export other than OTLP/HTTP.
            """,
        version: syncVersion,
        subcommands: [
            Enqueue.self, Drain.self, List.self, Show.self, Wait.self, Stats.self, Retry.self, Purge.self, Release.self, Pause.self, Resume.self, Run.self, Console.self, Keys.self, Demo.self,
        ]
    )

    /// The name the command answers to: `courier-sync` as the Debian package installs it
    /// (Debian's coreutils owns `/usr/bin/sync`), so that its help, man pages and completions
    /// say so; `sync` otherwise.
    static let invokedName: String = {
        let name = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "sync"
        return name == "courier-sync" ? name : "sync"
    }()

    /// `--db`, `--keyring`, `--sealing` and `--json` before the command name (`sync --db PATH
    /// list`); each command also declares them, and sees the values given here.
    @OptionGroup var options: QueueOptions

    /// `sync` without a command: the help, on standard error, and exit 64 (bad usage).
    func run() async throws {
        FileHandle.standardError.write(Data((Self.helpMessage() + "\n").utf8))
        throw SysExit.usage
    }
}
