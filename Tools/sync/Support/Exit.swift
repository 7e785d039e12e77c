import ArgumentParser
import Foundation
import OfflineQueue
import QueueEncryption
#if canImport(Glibc)
import Glibc
#endif

/// Exit statuses from sysexits.h.
enum SysExit {
    /// EX_USAGE: the command line is wrong.
    static let usage = ExitCode(64)
    /// EX_DATAERR: bad input data (an invalid URL or method, a corrupt database).
    static let dataError = ExitCode(65)
    /// EX_NOINPUT: an input (the database for a read-only command, a data file) does not exist.
    static let noInput = ExitCode(66)
    /// EX_UNAVAILABLE: the database server cannot be reached.
    static let unavailable = ExitCode(69)
    /// EX_OSERR: the system refused a resource, such as the port of `--metrics-address`.
    static let osError = ExitCode(71)
    /// EX_CANTCREAT: the database cannot be created.
    static let cannotCreate = ExitCode(73)
    /// EX_IOERR: reading or writing failed.
    static let ioError = ExitCode(74)
    /// EX_TEMPFAIL: entries remain; try again later.
    static let tryAgain = ExitCode(75)
    /// EX_CONFIG: a file the command is configured with is unsafe to use (a keyring open to
    /// other users, or a symbolic link), or the keyring does not fit the queue (a key it needs
    /// is missing or has other bytes; sealing is required but entries are in clear), or OTEL_*
    /// variables ask for an export `sync` does not have (an exporter other than OTLP/HTTP).
    static let unsafeConfiguration = ExitCode(78)
}

/// Says `message` on standard error as one line, prefixed with the tool's name.
func complain(_ message: String) {
    FileHandle.standardError.write(Data("sync: \(Output.terminalSafe(message))\n".utf8))
}

/// The exit status for a queue error, after saying what went wrong.
func sysExit(for error: QueueError) -> ExitCode {
    if error.kind == .secretHeader, let name = error.headerName {
        complain("""
            header \(name) holds a secret and is not stored by default. Either pass --store-secrets \
            (the database then holds the secret), or use a template resolved at send time, such as \
            -H '\(name): Bearer ${env:API_TOKEN}' or -H '\(name): Bearer ${credential:NAME}' \
            (a systemd credential from $CREDENTIALS_DIRECTORY)
            """)
    } else {
        complain(error.description)
    }
    switch error.kind {
    case .corruptDatabase, .newerSchema, .invalidRequest, .secretHeader, .noSuchEntry, .entryInFlight: return SysExit.dataError
    case .databaseMissing: return SysExit.noInput
    case .cannotCreate, .readOnly: return SysExit.cannotCreate
    case .diskFull, .io: return SysExit.ioError
    case .unavailable: return SysExit.unavailable
    case .keyUnavailable: return SysExit.unsafeConfiguration
    case .sealBroken: return SysExit.dataError
    default: return SysExit.dataError
    }
}

/// The exit status for a keyring error about the keyring at `path`, after saying what went
/// wrong. `creating` when the command makes a new file (`sync keys new`): then any failure to
/// write it is EX_CANTCREAT.
func sysExit(for error: SealError, keyring path: String, creating: Bool = false) -> ExitCode {
    var missing: Bool {
        var info = stat()
        return error.path == path && lstat(path, &info) != 0 && errno == ENOENT
    }
    if error.kind == .keyringIO && !creating && missing {
        complain("no keyring at \(path)")
        return SysExit.noInput
    }
    complain(error.description)
    switch error.kind {
    case .missingCredential: return SysExit.noInput
    case .keyringExists: return SysExit.cannotCreate
    case .keyringIO: return creating ? SysExit.cannotCreate : SysExit.ioError
    case .unsafeKeyring: return SysExit.unsafeConfiguration
    default: return SysExit.dataError
    }
}

/// Runs `body`, turning a keyring error about the keyring at `path` into one line on standard
/// error and a sysexits status; `creating` as for ``sysExit(for:keyring:creating:)``.
func reporting<T>(keyring path: String, creating: Bool = false, _ body: () throws(SealError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw sysExit(for: error, keyring: path, creating: creating)
    }
}
