import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO
import QueueConsole
import Testing

/// A console over a fresh SQLite queue in a temp folder, with an admin (`admin`/`secret`),
/// a read-only user (`viewer`/`look`) and a bearer token (`tok-admin`) for an admin client.
/// The queue's client answers `/ok` with 200 and anything else with 400 and a body that
/// holds markup, so a drain makes delivered and dead entries without a network.
struct ConsoleFixture {
    let folder: URL
    let queue: OfflineQueue
    let console: QueueConsole
    /// The queue's schema, on PostgreSQL (dropped by ``close()``); `nil` on SQLite.
    var schema: String? = nil

    static let users = """
    # test users
    \(ConsoleUsers.line(name: "admin", role: .admin, password: "secret", iterations: 1_000))
    \(ConsoleUsers.line(name: "viewer", role: .read, password: "look", iterations: 1_000))
    \(ConsoleUsers.line(name: "robot", role: .admin, token: "tok-admin"))
    """

    /// `clock`: the queue's, for a test whose pages count by time ("delivered in the last
    /// minute"), so that a loaded machine's minute does not pass between two reads.
    init(prefix: String = "", clock: ManualQueueClock? = nil) throws {
        folder = Self.newFolder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var configuration = Self.configuration(folder.appendingPathComponent("queue.db").path)
        if let clock { configuration.clock = clock.queueClock }
        queue = try OfflineQueue(configuration: configuration, client: Self.client())
        console = QueueConsole(queue: queue, users: try ConsoleUsers(parsing: Self.users), prefix: prefix, countsMaxAge: .zero)
    }

    /// The same console over a PostgreSQL queue in a schema of its own, in the cluster of
    /// `COURIER_TEST_POSTGRES_URL` (with `PGPASSWORD`).
    init(postgres url: String) async throws {
        folder = Self.newFolder()
        let schema = "c_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        self.schema = schema
        queue = try await OfflineQueue.open(configuration: Self.configuration(url + (url.contains("?") ? "&" : "?") + "schema=" + schema), client: Self.client())
        console = QueueConsole(queue: queue, users: try ConsoleUsers(parsing: Self.users), countsMaxAge: .zero)
    }

    /// The test cluster's URL, when `Tools/test` (or a shell) set one.
    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["COURIER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func newFolder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-console-\(UUID().uuidString.prefix(8))")
    }

    private static func configuration(_ path: String) -> QueueConfiguration {
        var configuration = QueueConfiguration(path: path, durability: .normal, secrets: .store)
        configuration.metrics.isEnabled = false
        return configuration
    }

    private static func client() -> APIClient {
        let transport = StubTransport(fallback: StubTransport.Stub(status: .badRequest, body: Data(#"<script>alert(1)</script>"><img src=x onerror=alert(2)>"#.utf8)))
        transport.on(.post, "/ok", respond: .status(200))
        transport.on(.post, "/busy", respond: StubTransport.Stub(status: .tooManyRequests, headers: [HTTPField.Name("Retry-After")!: "600"]))
        transport.on(.post, "/created", respond: StubTransport.Stub(
            status: .created, headers: [.location: "/notes/<b>7</b>", .eTag: "\"v1\""], body: Data(#"{"note":"<script>alert(3)</script>"}"#.utf8)
        ))
        return APIClient(configuration: ClientConfiguration(baseURL: URL(string: "https://api.example.com")!), transport: transport)
    }

    func close() async {
        await queue.close()
        try? FileManager.default.removeItem(at: folder)
        if let schema, let url = Self.postgresURL { await Self.drop(schema: schema, url: url) }
    }

    private static func drop(schema: String, url: String) async {
        guard let location = try? PostgresLocation(url: url) else { return }
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user,
            password: ProcessInfo.processInfo.environment["PGPASSWORD"], database: location.database, tls: .disable
        )
        guard let connection = try? await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "courier.tests")) else { return }
        _ = try? await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: Logger(label: "courier.tests"))
        try? await connection.close()
    }

    /// Runs `body` with a fixture of `kind` and a router test client, then closes the fixture.
    static func with(_ kind: ConsoleStore, _ body: @escaping @Sendable (ConsoleFixture, any TestClientProtocol) async throws -> Void) async throws {
        let fixture = kind == .sqlite ? try ConsoleFixture() : try await ConsoleFixture(postgres: try #require(postgresURL))
        try await fixture.serve(body)
    }

    /// Runs `body` with a fixture and a router test client, then closes the fixture.
    static func with(
        prefix: String = "", clock: ManualQueueClock? = nil, _ body: @escaping @Sendable (ConsoleFixture, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await ConsoleFixture(prefix: prefix, clock: clock).serve(body)
    }

    /// Runs `body` with a router test client of this fixture's console, then closes the fixture,
    /// whether `body` threw or not.
    private func serve(_ body: @escaping @Sendable (ConsoleFixture, any TestClientProtocol) async throws -> Void) async throws {
        do {
            let app = Application(router: console.router())
            try await app.test(.router) { client in try await body(self, client) }
        } catch {
            await close()
            throw error
        }
        await close()
    }

    @discardableResult
    func enqueue(_ path: String = "/ok", url: String? = nil, name: String? = nil, group: String? = nil, headers: [(name: String, value: String)] = []) async throws -> EntryID {
        try await queue.enqueue(method: "POST", url: url ?? "https://api.example.com\(path)", headers: headers, name: name, options: EnqueueOptions(group: group)).id
    }

    /// Sends what is due: `/ok` entries are delivered, the others dead.
    func drain() async throws {
        _ = try await queue.drain()
    }
}

enum Auth {
    static let admin = basic("admin", "secret")
    static let viewer = basic("viewer", "look")
    static let bearer = "Bearer tok-admin"

    static func basic(_ name: String, _ password: String) -> String {
        "Basic " + Data("\(name):\(password)".utf8).base64EncodedString()
    }
}

extension TestClientProtocol {
    /// A request as the given user; `json` asks for the JSON twin.
    func send(_ method: HTTPRequest.Method, _ uri: String, as authorization: String? = Auth.admin, json: Bool = false, form: String? = nil, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = extra
        if let authorization { headers[.authorization] = authorization }
        if json { headers[.accept] = "application/json" }
        if form != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        return try await execute(uri: uri, method: method, headers: headers, body: form.map { ByteBuffer(string: $0) })
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        let decoder = JSONDecoder()
        return try decoder.decode(type, from: Data(text.utf8))
    }
}

/// The JSON twins' shapes, as much as the tests read.
struct OverviewJSON: Decodable {
    struct Counts: Decodable { var pending, delivered, dead, inflight, blocked, stuck, total, waitingForNetwork: Int }
    struct Group: Decodable { var name: String }
    struct Tally: Decodable { var label, key, query: String; var pending, inflight, delivered, dead, total: Int; var paused: Bool }
    var counts: Counts
    var queuePaused: Bool
    var pausedGroups: [Group]
    var oldestPendingAgeSeconds: Int
    var groups: [Tally]
    var names: [Tally]
    var tallied: Int
    var talliedAll: Bool
    var deliveredLastMinute: Int
    var deliveredLastFiveMinutes: Int
}

struct OriginsJSON: Decodable {
    struct Origin: Decodable { var origin, pausedUntil, pauseStatus, concurrency, limit: String; var paused, canResume: Bool; var inflight: Int }
    var origins: [Origin]
    var hasOrigins: Bool
}

struct EntriesJSON: Decodable {
    struct Entry: Decodable { var id: Int64; var state: String; var name: String; var group: String; var url: String }
    var entries: [Entry]
    var next: Int64?
}

struct EntryJSON: Decodable {
    struct Header: Decodable { var name: String; var value: String; var redacted: Bool }
    var id: Int64
    var state: String
    var headers: [Header]
    var hasBody: Bool
    var bodySize: Int
    var attempts: Int
    var lastStatus: String
    var deadReason: String
    var parents: [Int64] = []
    var children: [Int64] = []
    var whenParentDies: String = ""
    var hasResponse = false
    var responseStatus = 0
    var responseHeaders: [Header] = []
    var responseBody = ""
}

struct ActionJSON: Decodable {
    var action: String
    var changed: [Int64]
    var skipped: [Int64]
    var message: String
}

struct ConfirmJSON: Decodable {
    var action: String
    var count: Int
    var through: Int64?
    var confirm: String
}

struct MatchingJSON: Decodable {
    var action: String
    var changed: Int
    var skipped: Int
    var message: String
}

/// The stores the parity suite runs the console on; PostgreSQL only with a test cluster.
enum ConsoleStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static var available: [ConsoleStore] { ConsoleFixture.postgresURL == nil ? [.sqlite] : allCases }

    var testDescription: String { rawValue }
}

/// A redirect's location without its notice's signature (`&ns=…`), which is random per console:
/// what the tests compare.
func unsigned(_ location: String?) -> String? {
    location?.replacing(/&ns=[A-Za-z0-9_-]+/, with: "")
}
