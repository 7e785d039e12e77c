import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// The upkeep an operator asks for: space given back, and the schema and rows checked.
extension PostgresQueueStore {
    /// PostgreSQL's autovacuum gives space back by itself.
    func releasePages() async throws(QueueError) -> Int { 0 }

    /// The schema's migrations as this code knows them, and no entry in flight without a drainer.
    func integrityCheck() async throws(QueueError) -> [String] {
        try await reading { connection in
            var problems: [String] = []
            let names = try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT name FROM §.migration ORDER BY version")), logger: self.logger
            ).decodeAll(String.self)
            if names != PostgresSchema.migrations.map(\.name).prefix(names.count).map({ $0 }) || names.count != PostgresSchema.version {
                problems.append("migrations \(names) differ from this version's \(PostgresSchema.migrations.map(\.name))")
            }
            let stray = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT count(*) FROM §.entry WHERE state = 'inflight' AND (lease_drainer IS NULL OR lease_owner IS NULL)
                """)), logger: self.logger).decodeAll(Int64.self).first ?? 0
            if stray > 0 { problems.append("\(stray) entries in flight name no drainer") }
            return problems.isEmpty ? ["ok"] : problems
        }
    }
}
