import ArgumentParser
import Foundation
import Logging
import OfflineQueue
import QueueConsole
import ServiceLifecycle
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

/// `sync console`: the operator console in the browser (Docs/Console.md).
struct Console: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the queue's operator console in the browser, or add a user to its credentials file.",
        discussion: """
            `sync console` (or `sync console serve`) serves the console for the queue (--db) at \
            --address, 127.0.0.1:9090 unless given, until SIGTERM or SIGINT. Its users come from \
            --credentials FILE, else the systemd credential $CREDENTIALS_DIRECTORY/courier-console \
            when it exists. Without users it serves a loopback address only, to anyone who reaches \
            it there (as an admin); on any other address it refuses to start (exit 64).

            Examples:
              sync console
              sync console add-user ops --role admin --credentials /etc/courier/console-users
              sync console --address 0.0.0.0:9090 --credentials /etc/courier/console-users
              sync console add-user prometheus --role read --token --credentials /etc/courier/console-users
            """,
        subcommands: [ConsoleServe.self, ConsoleAddUser.self],
        defaultSubcommand: ConsoleServe.self
    )
}

struct ConsoleServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the console (the default of `sync console`)."
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var console: ConsoleOptions

    @Option(name: .long, help: ArgumentHelp("Where to listen: HOST:PORT, [IPv6]:PORT, or a bare PORT for 127.0.0.1.", valueName: "address"))
    var address: String = "127.0.0.1:9090"

    @OptionGroup var logging: LogOptions

    func validate() throws {
        if ListenAddress(address) == nil {
            throw ValidationError("--address \(address.debugDescription) is not HOST:PORT, [IPv6]:PORT or a port (0 to 65535)")
        }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "courier.console")
        let address = ListenAddress(self.address)!
        let users = try console.loadUsers()
        try ConsoleOptions.checked(users: users, address: address, option: "--address")
        try await Runner.serve(options, .changing) { queue in
            let queueConsole = console.console(queue: queue, users: users, logger: logger)
            let router = queueConsole.router()
            let path = queueConsole.prefix + "/"
            let server = HTTPServer(router: router, address: address, what: "the console", announcements: [("serving the console", path)], logger: logger)
            if users.isEmpty {
                logger.notice("the console has no users: anyone who can connect to \(address) may act on the queue")
            }
            let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await group.run()
        }
        logger.info("sync console stopped")
    }
}

struct ConsoleAddUser: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-user",
        abstract: "Add a console user to a credentials file, with a password read from standard input or a new bearer token.",
        discussion: """
            Appends one line (name, role, and a PBKDF2 password hash or a SHA-256 token hash) to \
            the file, creating it with mode 0600; a file that other users may read, a symbolic \
            link, or one that already has the name is refused. The password is the first line \
            of standard input (asked for without echo on a terminal). With --token it makes a \
            random bearer token instead and prints it once: it is stored only as its hash.

            Examples:
              sync console add-user ops --role admin --credentials /etc/courier/console-users
              printf '%s\\n' "$PASSWORD" | sync console add-user viewer --role read --credentials users
              sync console add-user prometheus --role read --token --credentials users
            """
    )

    @Argument(help: "The user's name: no spaces and no colon.")
    var name: String

    @Option(name: .long, help: "read (every page, no action) or admin.")
    var role: RoleChoice

    @Option(name: .long, help: ArgumentHelp("The credentials file. Default: $CREDENTIALS_DIRECTORY/courier-console under systemd.", valueName: "file"))
    var credentials: String?

    @Flag(name: .long, help: "Make a bearer token (printed once) instead of reading a password.")
    var token = false

    @Option(name: .long, help: .hidden)
    var iterations: Int = ConsoleUsers.defaultIterations

    func validate() throws {
        guard !name.isEmpty, !name.hasPrefix("#"), !name.contains(where: { $0.isWhitespace || $0 == ":" || $0.isNewline }) else {
            throw ValidationError("the name \(name.debugDescription) must be non-empty, without spaces or a colon, and not start with #")
        }
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
    }

    func run() throws {
        guard let path = ConsoleOptions.file(given: credentials) else {
            complain("add-user needs --credentials FILE (or $CREDENTIALS_DIRECTORY)")
            throw SysExit.usage
        }
        var info = stat()
        var existing = ""
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFREG else {
                complain("\(path) is not a regular file (a symbolic link?): refusing to write it")
                throw SysExit.unsafeConfiguration
            }
            guard info.st_mode & 0o077 == 0 else {
                complain("\(path) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it first")
                throw SysExit.unsafeConfiguration
            }
            let users = try ConsoleOptions.loadUsers(given: credentials)
            existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if users.names.contains(name) {
                complain("\(path) already has a user \(name)")
                throw SysExit.dataError
            }
        }
        let line: String
        var secret: String?
        if token {
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let made = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            secret = made
            line = ConsoleUsers.line(name: name, role: role.role, token: made)
        } else {
            let password = try Self.readPassword()
            line = ConsoleUsers.line(name: name, role: role.role, password: password, iterations: iterations)
        }
        let separator = existing.isEmpty || existing.hasSuffix("\n") ? "" : "\n"
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            complain("cannot write \(path): \(String(cString: strerror(errno)))")
            throw SysExit.cannotCreate
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data((separator + line + "\n").utf8))
            try handle.synchronize()
        } catch {
            complain("cannot write \(path): \((error as NSError).localizedDescription)")
            throw SysExit.ioError
        }
        if let secret { print(secret) }
        complain("added \(role.rawValue) user \(name) to \(path)")
    }

    /// The first line of standard input, asked for without echo on a terminal.
    static func readPassword() throws -> String {
        var password: String?
        if isatty(STDIN_FILENO) != 0 {
            password = getpass("password: ").map { String(cString: $0) }
        } else {
            password = readLine(strippingNewline: true)
        }
        guard let password, !password.isEmpty else {
            complain("no password on standard input (or pass --token for a bearer token)")
            throw SysExit.usage
        }
        return password
    }
}

/// What `--role` takes: ``ConsoleRole`` by name.
enum RoleChoice: String, ExpressibleByArgument, CaseIterable {
    case read, admin

    var role: ConsoleRole { self == .read ? .read : .admin }
}
