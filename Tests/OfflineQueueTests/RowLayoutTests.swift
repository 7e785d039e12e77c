import Foundation
import GRDB
@testable import OfflineQueue
@testable import OfflineQueueCore
@testable import OfflineQueuePostgres
import PostgresNIO
import QueueTestSupport
import Testing
import TestSupport

/// Each store's one map of the columns an entry is read from, against the schema it reads.
@Suite("Row layout: one column map per store")
struct RowLayoutTests {
    @Test("a map's column names are its cases in snake case, in order")
    func names() {
        #expect(Array(EntryColumn.columnNames().prefix(3)) == ["id", "idempotency_key", "method"])
        #expect(EntryColumn.groupKey.name == "group_key" && EntryColumn.timeoutMs.name == "timeout_ms")
        #expect(PostgresEntryColumn.names.last == "delivery" && PostgresEntryColumn.tag == PostgresEntryColumn.names.count)
    }

    @Test("SQLite: entry_view shows the map's columns in its order (and the stored state after the shown one)")
    func sqliteView() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        _ = try makeQueue(path: folder.databasePath, server: server)
        let columns = try await DatabaseQueue(path: folder.databasePath).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('entry_view') ORDER BY cid")
        }
        #expect(columns.filter { $0 != "row_state" } == EntryColumn.allCases.map(\.name))
        await server.shutdown()
    }

    @Test("PostgreSQL: settle_and_claim returns the map's columns in its order, then the tag")
    func postgresClaim() async throws {
        let store = try TestStore(.postgres)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let schema = try #require(store.schema)
            let queue = try await makeQueue(on: store, server: server)
            let returned = try await withPostgres(store.path) { connection in
                var names: [String] = []
                let query = PostgresQuery(unsafeSQL: """
                    SELECT a.name FROM pg_proc AS p, unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(name, mode, n)
                    WHERE p.oid = '"\(schema)".settle_and_claim'::regproc AND a.mode = 't' ORDER BY a.n
                    """)
                for try await name in try await connection.query(query, logger: testLogger).decode(String.self) { names.append(name) }
                return names
            }
            #expect(returned == PostgresEntryColumn.names.map { "o_" + $0 } + ["o_tag"])
            await queue.close()
            await server.shutdown()
        }
    }
}
