import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue
import OfflineQueuePostgres
import QueueEncryption
import Reachability

/// What `--sealing` takes: ``QueueSealing/Mode`` by name.
enum SealingChoice: String, ExpressibleByArgument, CaseIterable {
    case off, on, required

    var mode: QueueSealing.Mode {
        switch self {
        case .off: .off
        case .on: .on
        case .required: .required
        }
    }
}

/// Where the database is, its keyring, and how output looks: shared by every command.
struct QueueOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The queue database: a SQLite file, or postgres://USER@HOST[:PORT]/DB[?schema=S&sslmode=M] (password from PGPASSWORD or ~/.pgpass). Default: $SYNC_DB, else $STATE_DIRECTORY/queue.db under systemd, else $XDG_STATE_HOME/courier/queue.db (~/.local/state/courier/queue.db).",
        valueName: "path-or-url"
    ))
    var db: String?

    @OptionGroup var keys: KeyringSource

    @Option(name: .long, help: ArgumentHelp(
        "Seal new entries at rest: off, on (entries in clear are still read) or required (nothing in clear: a queue holding entries in clear is refused). Default: $SYNC_SEALING, else on with a keyring, off without. on and required need a keyring.",
        valueName: "mode"
    ))
    var sealing: SealingChoice?

    @OptionGroup var output: OutputOptions

    /// `--json`.
    var json: Bool { output.json }

    /// The database as it may be shown: a URL without its password.
    var shownPath: String { DatabaseLocation.redacted(path) }

    /// `--db`, then `SYNC_DB`, then the documented default.
    var path: String {
        if let db, !db.isEmpty { return db }
        return Self.defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    static func defaultPath(environment: [String: String]) -> String {
        if let explicit = environment["SYNC_DB"], !explicit.isEmpty { return explicit }
        if let state = environment["STATE_DIRECTORY"], !state.isEmpty {
            // systemd may pass several, separated by colons: the first is ours.
            let first = state.split(separator: ":").first.map(String.init) ?? state
            return first + "/queue.db"
        }
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
        return base + "/courier/queue.db"
    }

    /// The sealing the options ask for: `--sealing`, else `$SYNC_SEALING`, else on with a
    /// keyring and off without; the keyring from `--keyring`, else the systemd credential when
    /// it exists. Loads the keyring, so only commands that open the queue call it.
    ///
    /// Says what went wrong and throws an exit status: 64 for a mode that needs a keyring
    /// without one (or a `$SYNC_SEALING` that is no mode), and the statuses of `sync keys` for a
    /// keyring that cannot be used (66 missing, 78 unsafe, 65 malformed, 74 unreadable).
    func configuredSealing(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> QueueSealing {
        var mode = sealing?.mode
        var given = mode.map { "--sealing \($0)" }
        if mode == nil, let text = environment["SYNC_SEALING"], !text.isEmpty {
            guard let choice = SealingChoice(rawValue: text) else {
                complain("SYNC_SEALING=\(text) is not a sealing mode: off, on or required")
                throw SysExit.usage
            }
            mode = choice.mode
            given = "SYNC_SEALING=\(text)"
        }
        guard let keyring = try keys.loadIfFound() else {
            if let mode, mode != .off {
                complain("\(given ?? "sealing \(mode)") needs a keyring: \(KeyringSource.howToGive)")
                throw SysExit.usage
            }
            return .off
        }
        return QueueSealing(mode: mode ?? .on, keyring: keyring)
    }

    /// Opens the queue as `access` says, runs `body` with it, and closes it however `body`
    /// ends. The close waits for the writer's work, so the last connection to a SQLite file
    /// goes before the process exits and takes the file's `-wal` and `-shm` with it (a user who
    /// may only read the folder can then still read the file).
    func withQueue<T>(_ access: QueueAccess, _ body: (OfflineQueue) async throws -> T) async throws -> T {
        let sealing = try access.sealing ?? configuredSealing()
        let path = self.path
        // A database URL is never a file path: no folder is made for it.
        if access.create && !DatabaseLocation.isPostgresURL(path) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw QueueError.cannotCreate(path: folder.path, reason: (error as NSError).localizedDescription)
            }
        }
        var configuration = QueueConfiguration(path: path, createIfMissing: access.create, concurrency: access.concurrency)
        configuration.secrets = access.secrets
        configuration.templates = access.templates
        configuration.readOnly = access.readOnly
        configuration.sealing = sealing
        configuration.flow = access.flow
        let client = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: "http://localhost")!, timeout: access.timeout),
            transport: access.transport ?? UnusedTransport()
        )
        let queue = DatabaseLocation.isPostgresURL(path)
            ? try await OfflineQueue.open(configuration: configuration, client: client, monitor: access.monitor)
            : try OfflineQueue(configuration: configuration, client: client, monitor: access.monitor)
        do {
            let result = try await body(queue)
            await queue.close()
            return result
        } catch {
            await queue.close()
            throw error
        }
    }
}

/// How a command opens the queue (``QueueOptions/withQueue(_:_:)``).
///
/// Commands that only read or change existing entries leave `create` false, so a mistyped
/// path is a clear "no such database" (66); commands that only read set `readOnly` too
/// (``reading``), so they work for a user who may not write the file.
///
/// `sealing`: the queue's sealing; by default what ``QueueOptions/configuredSealing(environment:)``
/// makes of `--keyring` and `--sealing`, checked before anything is created.
struct QueueAccess {
    var create = false
    var readOnly = false
    var sealing: QueueSealing?
    var secrets: SecretHandling = .reject
    var transport: (any Transport)?
    var monitor: (any NetworkMonitor)?
    var concurrency = 8
    var timeout: Duration = .seconds(30)
    var flow = FlowControl()
    var templates = HeaderTemplates()

    /// For a command that only reads the queue.
    static var reading: QueueAccess { QueueAccess(readOnly: true) }

    /// For a command that changes the queue's entries but makes no queue.
    static var changing: QueueAccess { QueueAccess() }
}

/// The transport of commands that never send: making a real one would start event loops for
/// nothing.
struct UnusedTransport: Transport {
    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        throw NetworkError.invalidRequest(.other("this command does not send requests"))
    }
}
