import Foundation
import OfflineQueueCore

/// Schema 15: origin health (``OriginHealth``), the same rules as the store-neutral
/// ``OriginFlow/record(_:now:wall:inflight:settings:jitter:)`` and ``OriginFlowBook`` keep for
/// SQLite and memory, here inside `settle_and_claim`, so that a commit stays one statement.
///
/// Each origin's circuit lives in its `origin_flow` row: the failures in a row and the last of
/// them, when the next probe may go (`open_until`, the fleet's time; `NULL`: closed), the wait
/// it was scheduled after, when it opened, and a limit's own threshold (`open_after`). A healthy
/// origin has no row, so a queue whose origins answer costs what it did: the recording reads
/// the settlements' arrays and nothing more.
///
/// The commit records each answer in turn (`circuit_fail` for those that say the server is
/// unwell; a delivery closes the circuit and makes the origin's pending entries due), returns a
/// row tagged `opened` or `closed` for each circuit it changed, and claims one entry of an open
/// circuit whose probe is due and which has nothing in flight, tagged `probe` besides `claimed`.
extension PostgresSchema {
    static func originHealthMigration(_ schema: String) -> String {
        """
        ALTER TABLE "\(schema)".origin_flow
            ADD COLUMN open_after integer,
            ADD COLUMN failures integer NOT NULL DEFAULT 0,
            ADD COLUMN last_failure text,
            ADD COLUMN open_until double precision,
            ADD COLUMN probe_wait double precision,
            ADD COLUMN opened_at double precision;
        -- One more answer of `o` that says its server is unwell (OriginFlow.fail): the circuit
        -- opens at the threshold; a failed probe puts the next one twice as far off. Returns
        -- whether it opened. The origin's row is made if it has none, holding its pattern's limit.
        CREATE FUNCTION "\(schema)".circuit_fail(
            o text, words text, probe boolean, jitter double precision, fleet double precision,
            open_after integer, probe_interval double precision, max_probe double precision
        ) RETURNS boolean LANGUAGE plpgsql AS $$
        DECLARE
            f record;
            wait double precision;
        BEGIN
            INSERT INTO "\(schema)".origin_flow (origin, rate, burst, cap, open_after, tokens, refilled_at)
                SELECT o, p.rate, p.burst, p.cap, p.open_after, coalesce(p.burst, 0), fleet FROM "\(schema)".pattern_for(o) AS p
                ON CONFLICT (origin) DO NOTHING;
            SELECT * INTO f FROM "\(schema)".origin_flow AS g WHERE g.origin = o FOR UPDATE;
            IF f.open_until IS NOT NULL THEN
                IF NOT probe THEN
                    UPDATE "\(schema)".origin_flow SET failures = failures + 1, last_failure = words WHERE origin = o;
                    RETURN false;
                END IF;
                wait := least(max_probe, coalesce(f.probe_wait, probe_interval) * 2);
                UPDATE "\(schema)".origin_flow SET failures = failures + 1, last_failure = words, probe_wait = wait,
                    open_until = fleet + wait * (0.8 + 0.4 * jitter)
                    WHERE origin = o;
                RETURN false;
            END IF;
            IF coalesce(f.open_after, circuit_fail.open_after) <= 0 OR f.failures + 1 < coalesce(f.open_after, circuit_fail.open_after) THEN
                UPDATE "\(schema)".origin_flow SET failures = failures + 1, last_failure = words WHERE origin = o;
                RETURN false;
            END IF;
            UPDATE "\(schema)".origin_flow SET failures = failures + 1, last_failure = words, probe_wait = probe_interval,
                open_until = fleet + probe_interval * (0.8 + 0.4 * jitter), opened_at = fleet
                WHERE origin = o;
            RETURN true;
        END
        $$;
        \(dropSettleAndClaim(schema, flow: true))
        \(settleAndClaim(
            schema,
            outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
            columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
            dependencies: true, conflicts: true, flow: true, patterns: true, refill: true, groupInFlight: true, health: true
        ))
        """
    }

    static let healthDeclarations = """

            was_open boolean;
            circuit_opened text[] := '{}';
            circuit_closed text[] := '{}';
            open_origins text[];
            probe_origin text;
            cand_id bigint;
            probed bigint[];
            probe_soonest double precision;
        """

    /// A status that says the server is unwell, `s` being a settlement's row
    /// (``OriginHealth/isUnwell(status:)``).
    private static func unwellStatus(_ s: String) -> String {
        "(\(s).status BETWEEN 500 AND 599 AND \(s).status NOT IN (501, 505))"
    }

    /// ``PostgresSchema/flowRecording(_:patterns:)`` with the circuits: what the settlements'
    /// answers say of their origins, before they are recorded, by ``Settlement/flowSignal``'s
    /// rules (a probe's 503 is the circuit's, not an overload). Every row is locked first, in
    /// the order the claim locks them, so that two commits never wait for each other in turn.
    static func healthRecording(_ schema: String) -> String {
        """

                IF EXISTS (SELECT 1 FROM unnest(s_kind, s_status, s_unwell) AS k(kind, status, unwell)
                        WHERE k.kind IN ('retry', 'dead') AND (k.status IN (429, 503) OR \(unwellStatus("k")) OR k.unwell <> ''))
                    OR EXISTS (SELECT 1 FROM "\(schema)".origin_flow) THEN
                    PERFORM 1 FROM "\(schema)".origin_flow ORDER BY origin FOR UPDATE;
                    FOR sig IN
                        SELECT "\(schema)".origin_of(e.url) AS origin, s.kind, s.status, s.pause, nullif(s.unwell, '') AS unwell, s.probe, s.jitter
                        FROM unnest(s_id, s_kind, s_status, s_pause, s_unwell, s_probe, s_jitter) AS s(id, kind, status, pause, unwell, probe, jitter)
                        JOIN "\(schema)".entry AS e ON e.id = s.id AND e.state = 'inflight' AND e.lease_drainer = ANY(mine)
                        WHERE s.kind = 'deliver'
                            OR (s.kind IN ('retry', 'dead') AND (s.status IN (429, 503) OR \(unwellStatus("s")) OR s.unwell <> ''))
                        ORDER BY s.id
                    LOOP
                        IF sig.kind = 'deliver' THEN
                            -- A delivery grows a halved concurrency back, and closes the circuit.
                            SELECT f.open_until IS NOT NULL INTO was_open FROM "\(schema)".origin_flow AS f WHERE f.origin = sig.origin;
                            UPDATE "\(schema)".origin_flow SET
                                successes = CASE WHEN shrunk_to IS NULL THEN successes WHEN successes + 1 >= grow_after THEN 0 ELSE successes + 1 END,
                                shrunk_to = CASE WHEN shrunk_to IS NULL OR successes + 1 < grow_after THEN shrunk_to
                                    WHEN shrunk_to + 1 >= least(ceiling, coalesce(cap, ceiling)) THEN NULL ELSE shrunk_to + 1 END,
                                failures = 0, last_failure = NULL, open_until = NULL, probe_wait = NULL, opened_at = NULL
                            WHERE origin = sig.origin AND (shrunk_to IS NOT NULL OR failures > 0 OR open_until IS NOT NULL OR last_failure IS NOT NULL);
                            IF was_open THEN
                                circuit_closed := array_append(circuit_closed, sig.origin);
                                -- Every pending entry of the origin is due at once (once per recovery, it
                                -- reads the pending ones: no index finds an origin's entries).
                                UPDATE "\(schema)".entry SET next_attempt_at = fleet
                                    WHERE state = 'pending' AND next_attempt_at > fleet AND "\(schema)".origin_of(url) = sig.origin;
                                -- Every drainer claims: the backlog flows from every host.
                                PERFORM pg_notify(\(literal(schema + ".enqueued")), '');
                            END IF;
                        ELSIF sig.kind = 'retry' AND sig.pause >= 0 THEN
                            INSERT INTO "\(schema)".origin_flow AS f (origin, paused_until, pause_status, rate, burst, cap, open_after, tokens, refilled_at)
                                SELECT sig.origin, fleet + sig.pause, sig.status, p.rate, p.burst, p.cap, p.open_after, coalesce(p.burst, 0), fleet
                                FROM "\(schema)".pattern_for(sig.origin) AS p
                            ON CONFLICT (origin) DO UPDATE SET
                                pause_status = CASE WHEN coalesce(f.paused_until, '-infinity') < EXCLUDED.paused_until
                                    THEN EXCLUDED.pause_status ELSE f.pause_status END,
                                paused_until = greatest(coalesce(f.paused_until, '-infinity'), EXCLUDED.paused_until);
                        ELSIF sig.status = 429 OR (sig.status = 503 AND NOT sig.probe) THEN
                            SELECT count(*) INTO n FROM "\(schema)".entry AS i
                                WHERE i.state = 'inflight' AND "\(schema)".origin_of(i.url) = sig.origin;
                            n := greatest(n, 1);
                            INSERT INTO "\(schema)".origin_flow AS f (origin, shrunk_to, rate, burst, cap, open_after, tokens, refilled_at)
                                SELECT sig.origin, greatest(1, least(n, coalesce(p.cap, n)) / 2), p.rate, p.burst, p.cap, p.open_after, coalesce(p.burst, 0), fleet
                                FROM "\(schema)".pattern_for(sig.origin) AS p
                            ON CONFLICT (origin) DO UPDATE SET successes = 0,
                                shrunk_to = greatest(1, coalesce(f.shrunk_to, least(n, coalesce(f.cap, n))) / 2);
                            -- A 503 says the server is unavailable: it counts towards the circuit too.
                            IF sig.status = 503 AND "\(schema)".circuit_fail(sig.origin, 'HTTP 503', false, sig.jitter, fleet, open_after, probe_interval, max_probe) THEN
                                circuit_opened := array_append(circuit_opened, sig.origin);
                            END IF;
                        ELSIF "\(schema)".circuit_fail(
                            sig.origin, CASE WHEN \(unwellStatus("sig")) THEN 'HTTP ' || sig.status ELSE sig.unwell END, sig.probe, sig.jitter,
                            fleet, open_after, probe_interval, max_probe
                        ) THEN
                            circuit_opened := array_append(circuit_opened, sig.origin);
                        END IF;
                    END LOOP;
                END IF;
        """
    }

    /// The rows that say which circuits the recording opened and closed (`o_url`: the origin).
    static let circuitChanges = """

                o_tag := 'opened';
                FOR o_url IN SELECT unnest(circuit_opened) LOOP
                    RETURN NEXT;
                END LOOP;
                o_tag := 'closed';
                FOR o_url IN SELECT unnest(circuit_closed) LOOP
                    RETURN NEXT;
                END LOOP;
        """
}
