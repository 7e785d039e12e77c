import ArgumentParser
import Foundation
import Logging
import OfflineQueue
import QueueConsole
import QueueEncryption
#if canImport(Glibc)
import Glibc
#endif

/// `--credentials FILE` and `--console-prefix`: shared by `sync console` and `sync run --console`.
struct ConsoleOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The console's users, one a line (`sync console add-user` writes them). Default: the systemd credential $CREDENTIALS_DIRECTORY/courier-console when it exists. Without users the console answers only on a loopback address, to anyone who reaches it there.",
        valueName: "file"
    ))
    var credentials: String?

    @Option(name: .customLong("console-prefix"), help: ArgumentHelp(
        "The path the console's pages are under, for a reverse proxy that forwards it (such as /queue).", valueName: "path"
    ))
    var prefix: String = ""

    @Option(name: .long, help: ArgumentHelp(
        "A URL of your tracing UI with {trace_id} where an entry's trace id goes (Jaeger: https://jaeger.example.com/trace/{trace_id}): the entry page links its trace there.",
        valueName: "url"
    ))
    var traceLink: String?

    func validate() throws {
        guard let traceLink else { return }
        guard traceLink.contains("{trace_id}") else { throw ValidationError("--trace-link needs {trace_id} where the trace id goes") }
        let probe = traceLink.replacingOccurrences(of: "{trace_id}", with: "0")
        guard let url = URL(string: probe), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
            throw ValidationError("--trace-link \(traceLink.debugDescription) is not an http or https URL")
        }
    }

    /// The systemd credential the console's users come in (`LoadCredential=courier-console:…`).
    static let credentialName = "courier-console"

    /// `--credentials`, else the systemd credential's path (whether or not it exists), else `nil`.
    var file: String? { Self.file(given: credentials) }

    /// `given`, else the systemd credential's path (whether or not it exists), else `nil`.
    static func file(given credentials: String?) -> String? {
        if let credentials, !credentials.isEmpty { return credentials }
        return KeyringSource.credentialsFolder().map { URL(fileURLWithPath: $0, isDirectory: true).appendingPathComponent(Self.credentialName).path }
    }

    /// The users: from `--credentials` (which must exist: 66), else from the credential when
    /// it exists, else none. A line that does not parse: 65; a file that cannot be read: 74; a
    /// file open to other users, a symbolic link or not a regular file: 78, as the keyring is
    /// refused (the password hashes would be open to an offline guess).
    func loadUsers() throws -> ConsoleUsers { try Self.loadUsers(given: credentials) }

    /// The users of ``loadUsers()`` with `--credentials` `given`.
    static func loadUsers(given credentials: String?) throws -> ConsoleUsers {
        guard let path = file(given: credentials) else { return try ConsoleUsers(parsing: "") }
        var info = stat()
        guard stat(path, &info) == 0 else {
            if credentials == nil || credentials?.isEmpty == true { return try ConsoleUsers(parsing: "") }
            complain("no credentials file at \(path)")
            throw SysExit.noInput
        }
        let text = try readPrivateFile(path, what: "credentials file")
        do {
            return try ConsoleUsers(parsing: text)
        } catch {
            complain("\(path): \(error)")
            throw SysExit.dataError
        }
    }

    /// The console over `queue` for a server at `address`: with users, every request needs
    /// one; without, only a loopback address is served (anyone there is an admin). Refuses a
    /// non-loopback address without users (64), before anything is opened.
    static func checked(users: ConsoleUsers, address: ListenAddress, option: String) throws {
        if users.isEmpty && !address.isLoopback {
            complain("""
                refusing to serve the console on \(address) without users: anyone who reaches it could change the queue. \
                Add a user (sync console add-user NAME --role admin --credentials FILE) and pass --credentials FILE \
                (or the systemd credential \(credentialName)), or bind \(option) to 127.0.0.1
                """)
            throw SysExit.usage
        }
    }

    func console(queue: OfflineQueue, users: ConsoleUsers, logger: Logger) -> QueueConsole {
        QueueConsole(queue: queue, users: users, prefix: prefix, logger: logger, anonymous: users.isEmpty ? .admin : nil, traceLink: traceLink)
    }
}
