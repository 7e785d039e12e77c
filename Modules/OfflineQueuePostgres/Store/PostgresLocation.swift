public import Foundation
public import OfflineQueueCore
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL queue lives, read from its URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&schema=…&sslrootcert=…&passfile=…&connect_timeout=…]`
/// (or `postgresql://`).
///
/// The password comes from the URL, else `PGPASSWORD`, else a password file in libpq's format
/// (`host:port:database:user:password`, `*` for any): `passfile=` in the URL, `PGPASSFILE`, or
/// `~/.pgpass`. It is never shown: ``redacted`` and every message leave it out.
///
/// `sslmode` is `disable`, `allow` or `prefer` (TLS when the server offers it, not verified;
/// the default, as in libpq), `require` (TLS, not verified), or `verify-ca` / `verify-full`
/// (TLS, the certificate verified against the system's roots or `sslrootcert`, and the host
/// name checked). `schema` names the schema holding the queue's tables (`courier` unless
/// given): letters, digits and `_`, at most 48 characters. `connect_timeout` is libpq's: the
/// seconds a connection may take to open (at least 2), `0` for no limit; 5 unless given.
public struct PostgresLocation: Sendable, Hashable {
    /// The server's host name or IP address.
    public var host: String
    /// The server's TCP port; 5432 unless the URL gives one.
    public var port: Int
    /// The user to connect as, percent-decoded.
    public var user: String
    /// The database to connect to, percent-decoded.
    public var database: String
    /// The schema holding the queue's tables; `defaultSchema` (`courier`) unless the URL names
    /// one.
    public var schema: String
    /// Whether and how the connection uses TLS; `prefer` unless the URL gives `sslmode`.
    public var sslMode: SSLMode
    /// A file of trusted root certificates (PEM) for `verify-ca` and `verify-full`.
    public var sslRootCertificate: String?
    /// How long opening a connection may take; `nil`: no limit.
    public var connectTimeout: Duration?
    /// Never printed; see ``redacted``.
    package var password: String?

    /// The connect timeout when the URL gives none.
    public static let defaultConnectTimeout = Duration.seconds(5)

    /// How a connection uses TLS, as libpq's `sslmode`; the raw value is the URL's spelling.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// `disable`: no TLS. `allow` and `prefer`: TLS when the server offers it, its certificate
        /// not verified. `require`: TLS always, its certificate not verified.
        case disable, allow, prefer, require
        /// TLS always, the certificate verified against the system's roots or `sslRootCertificate`;
        /// the host name is not checked.
        case verifyCA = "verify-ca"
        /// As `verifyCA`, and the certificate must also match the host name.
        case verifyFull = "verify-full"
    }

    /// The schema used when the URL names none.
    public static let defaultSchema = "courier"

    /// Whether `path` is a PostgreSQL URL (`postgres://` or `postgresql://`, any case): what
    /// a program that takes either store by its path asks before it opens one.
    ///
    /// ```swift
    /// let queue = PostgresLocation.isPostgresURL(configuration.path)
    ///     ? try await OfflineQueue.open(configuration: configuration, client: client)
    ///     : try OfflineQueue(configuration: configuration, client: client)
    /// ```
    public static func isPostgresURL(_ path: String) -> Bool {
        DatabaseLocation.isPostgresURL(path)
    }

    /// Reads `url`; `environment` gives `PGPASSWORD`, `PGPASSFILE` and `HOME`.
    ///
    /// - Throws: `QueueError.invalidRequest(_:)` naming what is wrong (the password is never
    ///   part of the message).
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(QueueError) {
        let shown = DatabaseLocation.redacted(url)
        guard DatabaseLocation.isPostgresURL(url), let components = URLComponents(string: url) else {
            throw .invalidRequest("\(shown) is not a postgres:// or postgresql:// URL")
        }
        guard let host = components.host, !host.isEmpty else { throw .invalidRequest("\(shown) names no host") }
        guard let user = components.user, !user.isEmpty else { throw .invalidRequest("\(shown) names no user (postgres://USER@HOST/DATABASE)") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw .invalidRequest("\(shown) names no database (postgres://USER@HOST/DATABASE)") }
        self.host = host
        self.port = components.port ?? 5432
        self.user = user.removingPercentEncoding ?? user
        self.database = database.removingPercentEncoding ?? database
        var schema = Self.defaultSchema
        var sslMode = SSLMode.prefer
        var passfile: String?
        var connectTimeout: Duration? = Self.defaultConnectTimeout
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "schema":
                schema = value
            case "sslmode":
                guard let mode = SSLMode(rawValue: value) else {
                    throw .invalidRequest("sslmode \(value.debugDescription) is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                sslMode = mode
            case "sslrootcert":
                sslRootCertificate = value
            case "passfile":
                passfile = value
            case "connect_timeout":
                // As libpq: whole seconds, at least 2; zero or less waits as long as it takes.
                guard let seconds = Int(value) else {
                    throw .invalidRequest("connect_timeout \(value.debugDescription) is not a whole number of seconds")
                }
                connectTimeout = seconds <= 0 ? nil : .seconds(max(2, min(seconds, 86_400 * 365)))
            case "application_name":
                continue
            default:
                throw .invalidRequest("\(shown): unknown parameter \(item.name.debugDescription) (known: schema, sslmode, sslrootcert, passfile, connect_timeout)")
            }
        }
        guard Self.isValidSchema(schema) else {
            throw .invalidRequest("schema \(schema.debugDescription) is not a name of letters, digits and _ (at most 48, not starting with a digit)")
        }
        self.schema = schema
        self.sslMode = sslMode
        self.connectTimeout = connectTimeout
        if let password = components.password {
            self.password = password.removingPercentEncoding ?? password
        } else if let password = environment["PGPASSWORD"], !password.isEmpty {
            self.password = password
        } else {
            let file = passfile ?? environment["PGPASSFILE"] ?? environment["HOME"].map { $0 + "/.pgpass" }
            self.password = file.flatMap { Self.password(inFile: $0, host: host, port: port, database: self.database, user: self.user) }
        }
    }

    /// The URL without its password, for messages and logs.
    public var redacted: String {
        var text = "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
        var parameters: [String] = []
        if schema != Self.defaultSchema { parameters.append("schema=\(schema)") }
        if sslMode != .prefer { parameters.append("sslmode=\(sslMode.rawValue)") }
        if connectTimeout != Self.defaultConnectTimeout { parameters.append("connect_timeout=\(connectTimeout?.components.seconds ?? 0)") }
        if !parameters.isEmpty { text += "?" + parameters.joined(separator: "&") }
        return text
    }

    static func isValidSchema(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    /// The password of the first matching line of a libpq password file, if readable.
    static func password(inFile path: String, host: String, port: Int, database: String, user: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            // Fields are separated by `:`; `\:` and `\\` escape.
            var fields: [String] = [""]
            var escaped = false
            for character in line {
                if escaped {
                    fields[fields.count - 1].append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == ":" && fields.count < 5 {
                    fields.append("")
                } else {
                    fields[fields.count - 1].append(character)
                }
            }
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// PostgresNIO's settings for one connection.
    func connectionConfiguration() throws(QueueError) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: try tls()
        )
        configuration.options.connectTimeout = .seconds(connectTimeoutSeconds)
        return configuration
    }

    /// ``connectTimeout`` in seconds, as PostgresNIO takes it (no limit: a year).
    private var connectTimeoutSeconds: Int64 {
        connectTimeout?.components.seconds ?? 86_400 * 365
    }

    /// PostgresNIO's settings for the pool.
    /// `synchronousCommit` off makes every commit of the pool's connections asynchronous
    /// (``QueueDurability/normal``).
    func clientConfiguration(maximumConnections: Int, synchronousCommit: Bool = true) throws(QueueError) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: try clientTLS()
        )
        if !synchronousCommit { configuration.options.additionalStartupParameters = [("synchronous_commit", "off")] }
        configuration.options.connectTimeout = .seconds(connectTimeoutSeconds)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = 0
        return configuration
    }

    private func tlsConfiguration() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .verifyCA, .verifyFull:
            tls.certificateVerification = sslMode == .verifyFull ? .fullVerification : .noHostnameVerification
            if let sslRootCertificate { tls.trustRoots = .file(sslRootCertificate) }
        default:
            tls.certificateVerification = .none
        }
        return tls
    }

    private func sslContext() throws(QueueError) -> NIOSSLContext {
        do {
            return try NIOSSLContext(configuration: tlsConfiguration())
        } catch {
            throw .invalidRequest("cannot set up TLS for \(redacted): \(error)")
        }
    }

    private func tls() throws(QueueError) -> PostgresConnection.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .allow, .prefer: .prefer(try sslContext())
        case .require, .verifyCA, .verifyFull: .require(try sslContext())
        }
    }

    private func clientTLS() throws(QueueError) -> PostgresClient.Configuration.TLS {
        switch sslMode {
        case .disable: .disable
        case .allow, .prefer: .prefer(tlsConfiguration())
        case .require, .verifyCA, .verifyFull: .require(tlsConfiguration())
        }
    }
}
