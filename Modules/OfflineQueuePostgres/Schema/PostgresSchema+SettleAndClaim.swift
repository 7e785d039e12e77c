import Foundation

/// `settle_and_claim`, the drain's one statement a commit, as each migration that changes it
/// makes it again (moved here from PostgresSchema.swift as it was).
extension PostgresSchema {
    /// Drops `settle_and_claim` (v2's arguments, which every later definition keeps), so that a
    /// migration can make it again with other result columns.
    /// With `flow` (v9 on), the arguments v9 added.
    /// With `health` (v15 on), the arguments v15 added.
    static func dropSettleAndClaim(_ schema: String, flow: Bool = false, health: Bool = false) -> String {
        """
        DROP FUNCTION "\(schema)".settle_and_claim(
            bigint[], double precision, bigint[], text[], integer[], double precision[], boolean[], integer[], text[], text[],
            boolean[], text[], boolean, text, bigint, integer, text, double precision, double precision\(flow ? ", double precision[], integer, integer" : "")\(
                health ? ", text[], boolean[], double precision[], integer, double precision, double precision" : "")
        );
        """
    }

    /// `settle_and_claim` as v2 made it, returning its claimed rows' columns up to `dead_reason`,
    /// then `columns` (declared as `outputs`; each starts with a comma), before the tag: one
    /// definition for every migration that adds a column to what a claim reads.
    ///
    /// With `dependencies` (v5 on): a blocked entry holds its group, and the children of the
    /// entries it delivers or gives up on are decided (`resolve_blocked`) before it claims.
    /// With `conflicts` (v8 on): settlements of kind `conflict` (state `conflict`, which holds
    /// its group) and `drop` (state `superseded`, its children decided as a dead parent's).
    /// With `flow` (v9 on): flow control by origin (``PostgresSchema/flowRecording(_:)``,
    /// ``PostgresSchema/flowClaim(_:candidates:)``), with three arguments more; with `patterns`
    /// (v10 on), limits by origin pattern too; with `refill` (v13 on), the bucket's rules of
    /// ``OriginFlowBook`` (``PostgresSchema/flowClaim(_:candidates:returning:patterns:refill:)``);
    /// with `groupInFlight` (v14 on), no entry of a group is claimed while one of it is in flight
    /// (an older one an operator retried waits for the newer one's settlement); with `health`
    /// (v15 on), origin health (``PostgresSchema/originHealthMigration(_:)``), with six
    /// arguments more.
    static func settleAndClaim(
        _ schema: String, outputs: String = "", columns: String = "", dependencies: Bool = false, conflicts: Bool = false, flow: Bool = false,
        patterns: Bool = false, refill: Bool = false, groupInFlight: Bool = false, health: Bool = false
    ) -> String {
        let groupOpen = conflicts ? "('pending', 'inflight', 'blocked', 'conflict')" : dependencies ? "('pending', 'inflight', 'blocked')" : "('pending', 'inflight')"
        let ended = conflicts ? "done.state IN ('dead', 'superseded')" : "done.state = 'dead'"
        let recordedColumns = dependencies ? "array_agg(done.id), array_agg(done.id) FILTER (WHERE done.state = 'delivered'), array_agg(done.id) FILTER (WHERE \(ended))" : "array_agg(done.id)"
        let states = conflicts ? "WHEN 'conflict' THEN 'conflict' WHEN 'drop' THEN 'superseded' " : ""
        let finishing = conflicts ? "('deliver', 'dead', 'conflict', 'drop')" : "('deliver', 'dead')"
        let excerpting = conflicts ? "('retry', 'dead', 'conflict', 'drop')" : "('retry', 'dead')"
        let recordedInto = dependencies ? "recorded, delivered, died" : "recorded"
        let resolve = dependencies ? """
                IF delivered IS NOT NULL OR died IS NOT NULL THEN
                    WITH marked AS (
                        UPDATE "\(schema)".entry_edge SET parent_delivered = true WHERE parent = ANY(coalesce(delivered, '{}')) RETURNING child
                    )
                    SELECT array_agg(k.child) INTO children FROM (
                        SELECT child FROM marked
                        UNION ALL SELECT g.child FROM "\(schema)".entry_edge AS g WHERE g.parent = ANY(coalesce(died, '{}'))
                    ) AS k;
                    IF children IS NOT NULL THEN
                        PERFORM "\(schema)".resolve_blocked(children, fleet);
                    END IF;
                END IF;
            """ : ""
        var declarations = dependencies ? "\n    delivered bigint[];\n    died bigint[];\n    children bigint[];" : ""
        if flow { declarations += flowDeclarations }
        if patterns { declarations += patternDeclarations }
        if health { declarations += healthDeclarations }
        let candidates = """
                        WHERE c.state = 'pending' AND c.next_attempt_at + 0 <= fleet
                        AND (since IS NULL OR c.last_attempt_at IS NULL OR c.last_attempt_at < since)
                        AND NOT EXISTS (SELECT 1 FROM "\(schema)".pause AS z WHERE z.group_key IS NULL OR z.group_key = c.group_key)
                        AND (c.group_key IS NULL OR NOT EXISTS (
                            SELECT 1 FROM "\(schema)".entry AS p
                            WHERE p.group_key = c.group_key AND p.id < c.id AND p.state IN \(groupOpen)))\(groupInFlight ? """

                        AND (c.group_key IS NULL OR NOT EXISTS (
                            SELECT 1 FROM "\(schema)".entry AS q WHERE q.state = 'inflight' AND q.group_key = c.group_key))
            """ : "")
                        ORDER BY c.priority DESC, c.id
            """
        let returning = """
                    RETURNING e.id, e.idempotency_key, e.method, e.url, e.headers, e.body, e.body_ref, e.body_length, e.scopes, e.name,
                        e.group_key, e.priority, e.timeout_ms, e.state, e.attempts, e.created_at, e.budget_from, e.next_attempt_at,
                        e.last_attempt_at, e.finished_at, e.waiting_network, e.lease_owner, e.lease_expires_at, e.last_status,
                        e.last_error, e.response_excerpt, e.dead_reason\(columns)
            """
        return """
        CREATE FUNCTION "\(schema)".settle_and_claim(
            mine bigint[], fleet double precision,
            s_id bigint[], s_kind text[], s_attempts integer[], s_next double precision[], s_waiting boolean[],
            s_status integer[], s_error text[], s_excerpt text[], s_has_excerpt boolean[], s_reason text[],
            reclaim boolean, lock_name text, current_number bigint,
            claim_limit integer, claim_owner text, lease_until double precision, since double precision\(flow ? ",\n    s_pause double precision[], grow_after integer, ceiling integer" : "")\(
                health ? ",\n    s_unwell text[], s_probe boolean[], s_jitter double precision[], open_after integer, probe_interval double precision, max_probe double precision" : "")
        ) RETURNS TABLE (
            o_id bigint, o_idempotency_key text, o_method text, o_url text, o_headers text, o_body bytea, o_body_ref text,
            o_body_length bigint, o_scopes text, o_name text, o_group_key text, o_priority integer, o_timeout_ms bigint, o_state text,
            o_attempts integer, o_created_at double precision, o_budget_from double precision, o_next_attempt_at double precision,
            o_last_attempt_at double precision, o_finished_at double precision, o_waiting_network boolean, o_lease_owner text,
            o_lease_expires_at double precision, o_last_status integer, o_last_error text, o_response_excerpt text,
            o_dead_reason text\(outputs), o_tag text
        )
        LANGUAGE plpgsql
        SET enable_bitmapscan = off
        SET enable_sort = off
        AS $$
        DECLARE
            recorded bigint[];\(declarations)
        BEGIN
            IF cardinality(s_id) > 0 THEN\(flow ? (health ? healthRecording(schema) : flowRecording(schema, patterns: patterns)) : "")
                -- Materialized: the join reads the arrays once, not once per row it updates.
                WITH s AS MATERIALIZED (
                    SELECT * FROM unnest(s_id, s_kind, s_attempts, s_next, s_waiting, s_status, s_error, s_excerpt, s_has_excerpt, s_reason)
                        AS s(id, kind, attempts, next, waiting, status, error, excerpt, has_excerpt, reason)
                ), done AS (
                    UPDATE "\(schema)".entry AS e SET
                        state = CASE s.kind WHEN 'deliver' THEN 'delivered' WHEN 'dead' THEN 'dead' \(states)ELSE 'pending' END,
                        attempts = e.attempts + s.attempts,
                        finished_at = CASE WHEN s.kind IN \(finishing) THEN fleet ELSE e.finished_at END,
                        next_attempt_at = CASE WHEN s.kind = 'retry' THEN fleet + s.next ELSE e.next_attempt_at END,
                        waiting_network = CASE s.kind WHEN 'retry' THEN s.waiting WHEN 'release' THEN e.waiting_network ELSE false END,
                        last_status = CASE WHEN s.kind = 'release' THEN e.last_status ELSE nullif(s.status, -1) END,
                        last_error = CASE s.kind WHEN 'release' THEN e.last_error WHEN 'deliver' THEN NULL ELSE s.error END,
                        response_excerpt = CASE WHEN s.kind IN \(excerpting) THEN (CASE WHEN s.has_excerpt THEN s.excerpt END)
                            ELSE e.response_excerpt END,
                        dead_reason = CASE WHEN s.kind = 'dead' THEN s.reason ELSE e.dead_reason END,
                        lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL
                    FROM s
                    WHERE e.id = ANY(s_id) AND e.id = s.id AND e.state = 'inflight' AND e.lease_drainer = ANY(mine)
                    RETURNING e.id\(dependencies ? ", e.state" : "")
                )
                SELECT \(recordedColumns) INTO \(recordedInto) FROM done;
        \(resolve)
                o_tag := 'lost';
                FOR o_id IN SELECT u FROM unnest(s_id) AS u WHERE u <> ALL(coalesce(recorded, '{}')) LOOP
                    RETURN NEXT;
                END LOOP;\(health ? circuitChanges : "")
            END IF;
            IF reclaim THEN
                WITH back AS (
                    UPDATE "\(schema)".entry AS e SET state = 'pending', lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL,
                        last_error = 'taken back from ' || e.lease_owner || ', a drainer that is gone'
                    WHERE e.state = 'inflight' AND e.lease_drainer <> current_number AND NOT EXISTS (SELECT 1 FROM pg_locks l
                        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        AND l.classid = hashtext(lock_name)::oid AND l.objid = (e.lease_drainer::integer)::oid)
                    RETURNING 1
                )
                SELECT count(*) INTO o_id FROM back;
                o_tag := 'reclaimed';
                RETURN NEXT;
                IF claim_limit > 0 AND current_number >= 0 THEN
                    UPDATE "\(schema)".entry SET state = 'pending', lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL
                    WHERE state = 'inflight' AND lease_expires_at < fleet AND lease_drainer <> current_number;
                END IF;
            END IF;
            IF claim_limit > 0 AND current_number >= 0\(flow ? " AND NOT EXISTS (SELECT 1 FROM \"\(schema)\".origin_flow)" : "") THEN
                RETURN QUERY WITH claimed AS (
                    UPDATE "\(schema)".entry AS e SET state = 'inflight', lease_owner = claim_owner, lease_drainer = current_number,
                        lease_expires_at = lease_until, last_attempt_at = fleet
                    WHERE e.id = ANY(ARRAY(
                        SELECT c.id FROM "\(schema)".entry AS c
            \(candidates)
                        LIMIT claim_limit
                        FOR UPDATE SKIP LOCKED
                    ))
            \(returning)
                )
                SELECT claimed.*, 'claimed' FROM claimed;\(flow ? flowClaim(schema, candidates: candidates, returning: returning, patterns: patterns, refill: refill, health: health) : "")
            END IF;
        END
        $$
        """
    }
}
