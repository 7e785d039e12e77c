import Foundation
import PostgresNIO
import QueueTestSupport

/// How much of the PostgreSQL store's PL/pgSQL the programs reached: each statement's count,
/// summed over every schema a program made (the functions are the same text in each), read
/// from the profiler of Debian's `postgresql-15-plpgsql-check` before the schema is dropped.
/// A branch is a body of an `IF` (its `THEN`, each `ELSIF`, its `ELSE`, and the fall-through of
/// one without an `ELSE`) or of a loop; it is reached when its first statement ran (or, for a
/// fall-through, when the `IF` ran more often than its bodies).
struct PLpgSQLCoverage: Sendable, CustomStringConvertible {
    struct Statement: Hashable, Sendable {
        var function: String
        var id: Int
        var parent: Int?
        var note: String?
        var line: Int
        var name: String
    }

    /// Executions per statement.
    private(set) var counts: [Statement: Int] = [:]
    /// Each function's source, by line.
    private(set) var sources: [String: [Int: String]] = [:]

    var isEmpty: Bool { counts.isEmpty }

    mutating func merge(_ other: PLpgSQLCoverage) {
        counts.merge(other.counts, uniquingKeysWith: +)
        sources.merge(other.sources) { first, _ in first }
    }

    /// The profile of the PL/pgSQL functions of `schema`, read on `connection`; empty when the
    /// profiler is not there (the cluster was started without `plpgsql_check`).
    static func read(schema: String, on connection: PostgresConnection) async -> PLpgSQLCoverage {
        var coverage = PLpgSQLCoverage()
        var binds = PostgresBindings()
        binds.append(schema)
        let statements = PostgresQuery(unsafeSQL: """
            SELECT p.proname::text, s.stmtid, s.parent_stmtid, s.parent_note, s.lineno, s.exec_stmts, s.stmtname
            FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace JOIN pg_language AS l ON l.oid = p.prolang,
                LATERAL plpgsql_profiler_function_statements_tb(p.oid) AS s
            WHERE n.nspname = $1 AND l.lanname = 'plpgsql'
            """, binds: binds)
        let lines = PostgresQuery(unsafeSQL: """
            SELECT p.proname::text, f.lineno, f.source
            FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace JOIN pg_language AS l ON l.oid = p.prolang,
                LATERAL plpgsql_profiler_function_tb(p.oid) AS f
            WHERE n.nspname = $1 AND l.lanname = 'plpgsql'
            """, binds: binds)
        do {
            for try await (function, id, parent, note, line, count, name) in try await connection.query(statements, logger: testLogger)
                .decode((String, Int, Int?, String?, Int, Int64, String).self) {
                coverage.counts[Statement(function: function, id: id, parent: parent, note: note, line: line, name: name), default: 0] += Int(count)
            }
            for try await (function, line, source) in try await connection.query(lines, logger: testLogger).decode((String, Int, String?).self) {
                // The schema's name written as the store's templates write it, so lines read the same in every schema.
                coverage.sources[function, default: [:]][line] = (source ?? "").replacingOccurrences(of: "\"\(schema)\".", with: "§.")
            }
        } catch {
            return PLpgSQLCoverage()
        }
        return coverage
    }

    /// A branch: the statements of one body of a compound statement.
    struct Branch: Hashable, Sendable {
        var function: String
        var owner: Int
        var note: String
        var line: Int
    }

    /// Every branch, with whether it was reached.
    var branches: [(branch: Branch, reached: Bool)] {
        var result: [(Branch, Bool)] = []
        let byFunction = Dictionary(grouping: counts.keys, by: \.function)
        for (function, statements) in byFunction {
            let byID = Dictionary(uniqueKeysWithValues: statements.map { ($0.id, $0) })
            let children = Dictionary(grouping: statements.filter { $0.parent != nil }, by: { $0.parent! })
            for (owner, kids) in children {
                guard let parent = byID[owner] else { continue }
                let bodies = Dictionary(grouping: kids, by: { $0.note ?? "body" })
                var bodiesRun = 0
                for (note, body) in bodies {
                    // A body's first statement runs whenever the body does.
                    let first = body.min { $0.id < $1.id }!
                    let runs = counts[first] ?? 0
                    bodiesRun += runs
                    result.append((Branch(function: function, owner: owner, note: note, line: first.line), runs > 0))
                }
                if parent.name == "IF" && !bodies.keys.contains("else body") {
                    // The fall-through of an IF without ELSE: taken when the IF ran more often than its bodies.
                    let taken = (counts[parent] ?? 0) > bodiesRun
                    result.append((Branch(function: function, owner: owner, note: "no else", line: parent.line), taken))
                }
            }
        }
        return result.sorted { ($0.0.function, $0.0.line, $0.0.note) < ($1.0.function, $1.0.line, $1.0.note) }
    }

    /// The statements never run, and the branches never taken, each as `function: line: source`.
    var unreached: [String] {
        let statements = counts.filter { $0.value == 0 }.keys.sorted { ($0.function, $0.line) < ($1.function, $1.line) }
            .map { "\($0.function): \($0.name) at line \($0.line): \(source($0.function, $0.line))" }
        let branches = self.branches.filter { !$0.reached }
            .map { "\($0.branch.function): branch '\($0.branch.note)' at line \($0.branch.line): \(source($0.branch.function, $0.branch.line))" }
        return statements + branches
    }

    private func source(_ function: String, _ line: Int) -> String {
        (sources[function]?[line] ?? "").trimmingCharacters(in: .whitespaces)
    }

    var description: String {
        guard !isEmpty else { return "PL/pgSQL coverage: no profile (the cluster runs without plpgsql_check)" }
        let functions = Set(counts.keys.map(\.function)).sorted()
        let lines = functions.map { function -> String in
            let statements = counts.filter { $0.key.function == function }
            let run = statements.filter { $0.value > 0 }.count
            let branches = self.branches.filter { $0.branch.function == function }
            let taken = branches.filter(\.reached).count
            return "  \(function): statements \(run)/\(statements.count), branches \(taken)/\(branches.count)"
        }
        return (["PL/pgSQL coverage:"] + lines).joined(separator: "\n")
    }
}
