import Foundation
import OfflineQueueCore

/// Schema 9: flow control by origin (``FlowControl``), the same rules as the store-neutral
/// ``OriginFlowBook`` and ``OriginFlow/record(_:now:wall:inflight:settings:)`` keep for SQLite
/// and memory, here inside `settle_and_claim`, so that a commit stays one statement.
///
/// `origin_flow` holds a row only for an origin paused by a `Retry-After`, shrunk by overloads
/// or limited; times are the fleet's. While it holds none, the claim is the one before it
/// (one `EXISTS` more). While it holds any, the claim locks them (one claim at a time reads and
/// debits them, across hosts), walks the claim order past the entries of held origins (at most
/// 4,096 rows past its limit), debits the buckets of the origins it took from, deletes rows
/// that hold nothing any more, and returns a row tagged `held` whose `o_next_attempt_at` is
/// how long until the soonest held origin frees by time.
extension PostgresSchema {
    static func originFlowMigration(_ schema: String) -> String {
        """
        CREATE TABLE "\(schema)".origin_flow (
            origin text PRIMARY KEY,
            paused_until double precision,
            pause_status integer,
            shrunk_to integer,
            successes integer NOT NULL DEFAULT 0,
            rate double precision,
            burst integer,
            cap integer,
            tokens double precision NOT NULL DEFAULT 0,
            refilled_at double precision NOT NULL DEFAULT 0
        );
        -- An entry's origin as its stored URL begins (FlowOrigin.key(ofURL:)).
        CREATE FUNCTION "\(schema)".origin_of(url text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT substring(url from '^[^:/?#]*://[^/?#]*') $$;
        \(dropSettleAndClaim(schema))
        \(settleAndClaim(
            schema,
            outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
            columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
            dependencies: true, conflicts: true, flow: true
        ))
        """
    }

    /// Schema 13: `settle_and_claim` as schema 10 made it, with the token bucket's rules of
    /// ``OriginFlowBook``: a token due within ``OriginFlow/timeTolerance`` counted,
    /// and `refilled_at` never moved back by a claim whose time is older than the last refill.
    static func flowRefillMigration(_ schema: String) -> String {
        """
        \(dropSettleAndClaim(schema, flow: true))
        \(settleAndClaim(
            schema,
            outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
            columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
            dependencies: true, conflicts: true, flow: true, patterns: true, refill: true
        ))
        """
    }

    /// Schema 14: one entry of a group in flight at a time, whatever its place in the group
    /// (``PostgresSchema/settleAndClaim(_:outputs:columns:dependencies:conflicts:flow:patterns:refill:groupInFlight:)``).
    static func groupInFlightMigration(_ schema: String) -> String {
        """
        \(dropSettleAndClaim(schema, flow: true))
        \(settleAndClaim(
            schema,
            outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
            columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
            dependencies: true, conflicts: true, flow: true, patterns: true, refill: true, groupInFlight: true
        ))
        """
    }

    /// Schema 10: limits by origin pattern (``FlowControl/OriginLimit/isPattern``), by the rules of
    /// ``OriginLimitTable``: `origin_matches` is its `matches(pattern:origin:)`, `pattern_for`
    /// the most specific pattern row that matches an origin (a row of NULLs when none).
    static func originPatternsMigration(_ schema: String) -> String {
        """
        CREATE FUNCTION "\(schema)".origin_matches(pattern text, origin text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT position('*' in pattern) > 0 AND position('*' in origin) = 0 AND length(origin) > length(pattern) - 1
                AND left(origin, position('*' in pattern) - 1) = left(pattern, position('*' in pattern) - 1)
                AND right(origin, length(pattern) - position('*' in pattern)) = substr(pattern, position('*' in pattern) + 1)
                AND substr(origin, position('*' in pattern), length(origin) - length(pattern) + 1) !~ '[:/@]' $$;
        CREATE FUNCTION "\(schema)".pattern_for(o text) RETURNS "\(schema)".origin_flow LANGUAGE sql STABLE
            AS $$ SELECT * FROM "\(schema)".origin_flow AS p WHERE position('*' in p.origin) > 0 AND "\(schema)".origin_matches(p.origin, o)
                ORDER BY octet_length(p.origin) DESC, p.origin LIMIT 1 $$;
        \(dropSettleAndClaim(schema, flow: true))
        \(settleAndClaim(
            schema,
            outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
            columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
            dependencies: true, conflicts: true, flow: true, patterns: true
        ))
        """
    }

    static let patternDeclarations = """

            patterned boolean;
            pat record;
            unmatched text[];
        """

    static let flowDeclarations = """

            sig record;
            cand record;
            n integer;
            allow jsonb;
            taken jsonb;
            picked bigint[];
            held_origins text[];
            soonest double precision;
        """

    /// What the settlements' answers say of their origins (`s_pause`: a `Retry-After` pause's
    /// seconds, `-1` for none), before they are recorded, so that an overload counts the entry
    /// that met it among those in flight. Deliveries count only towards rows that exist.
    /// With `patterns` (v10 on), a row that a pause or an overload makes for an origin holds
    /// the limit of the pattern that matches it (`pattern_for`).
    static func flowRecording(_ schema: String, patterns: Bool = false) -> String {
        let pauseRow = patterns ? """
                            INSERT INTO "\(schema)".origin_flow AS f (origin, paused_until, pause_status, rate, burst, cap, tokens, refilled_at)
                                SELECT sig.origin, fleet + sig.pause, sig.status, p.rate, p.burst, p.cap, coalesce(p.burst, 0), fleet
                                FROM "\(schema)".pattern_for(sig.origin) AS p
            """ : """
                            INSERT INTO "\(schema)".origin_flow AS f (origin, paused_until, pause_status)
                                VALUES (sig.origin, fleet + sig.pause, sig.status)
            """
        let overloadRow = patterns ? """
                            INSERT INTO "\(schema)".origin_flow AS f (origin, shrunk_to, rate, burst, cap, tokens, refilled_at)
                                SELECT sig.origin, greatest(1, least(n, coalesce(p.cap, n)) / 2), p.rate, p.burst, p.cap, coalesce(p.burst, 0), fleet
                                FROM "\(schema)".pattern_for(sig.origin) AS p
            """ : """
                            INSERT INTO "\(schema)".origin_flow AS f (origin, shrunk_to) VALUES (sig.origin, greatest(1, n / 2))
            """
        return """

                IF EXISTS (SELECT 1 FROM unnest(s_kind, s_status) AS k(kind, status) WHERE k.kind IN ('retry', 'dead') AND k.status IN (429, 503))
                    OR EXISTS (SELECT 1 FROM "\(schema)".origin_flow) THEN
                    FOR sig IN
                        SELECT "\(schema)".origin_of(e.url) AS origin, s.kind, s.status, s.pause
                        FROM unnest(s_id, s_kind, s_status, s_pause) AS s(id, kind, status, pause)
                        JOIN "\(schema)".entry AS e ON e.id = s.id AND e.state = 'inflight' AND e.lease_drainer = ANY(mine)
                        WHERE s.kind = 'deliver' OR (s.kind IN ('retry', 'dead') AND s.status IN (429, 503))
                        ORDER BY s.id
                    LOOP
                        IF sig.kind = 'deliver' THEN
                            UPDATE "\(schema)".origin_flow SET
                                successes = CASE WHEN successes + 1 >= grow_after THEN 0 ELSE successes + 1 END,
                                shrunk_to = CASE WHEN successes + 1 < grow_after THEN shrunk_to
                                    WHEN shrunk_to + 1 >= least(ceiling, coalesce(cap, ceiling)) THEN NULL ELSE shrunk_to + 1 END
                            WHERE origin = sig.origin AND shrunk_to IS NOT NULL;
                        ELSIF sig.kind = 'retry' AND sig.pause >= 0 THEN
        \(pauseRow)
                            ON CONFLICT (origin) DO UPDATE SET
                                pause_status = CASE WHEN coalesce(f.paused_until, '-infinity') < EXCLUDED.paused_until
                                    THEN EXCLUDED.pause_status ELSE f.pause_status END,
                                paused_until = greatest(coalesce(f.paused_until, '-infinity'), EXCLUDED.paused_until);
                        ELSE
                            SELECT count(*) INTO n FROM "\(schema)".entry AS i
                                WHERE i.state = 'inflight' AND "\(schema)".origin_of(i.url) = sig.origin;
                            n := greatest(n, 1);
        \(overloadRow)
                            ON CONFLICT (origin) DO UPDATE SET successes = 0,
                                shrunk_to = greatest(1, coalesce(f.shrunk_to, least(n, coalesce(f.cap, n))) / 2);
                        END IF;
                    END LOOP;
                END IF;
        """
    }

    /// The claim while `origin_flow` holds rows (the `ELSIF` after the plain claim's `IF`).
    /// With `patterns` (v10 on), an origin with no row that a pattern matches is given one
    /// (`pattern_for`) the first time the walk meets it, and the pattern's own row holds no
    /// origin's flow.
    ///
    /// With `refill` (v13 on), the bucket's rules as ``OriginFlow/wholeTokens(at:)`` and
    /// ``OriginFlowBook`` keep them: a token due within ``OriginFlow/timeTolerance`` of the
    /// claim's time is counted (the fleet's times are epoch seconds, whose differences carry an
    /// error of up to 2.4e-7 s, so a token due exactly now could read 0.999998 and be refused),
    /// and a claim never moves a refill back (one whose clock was read before it waited for the
    /// lock would count the time between the two readings twice).
    ///
    /// With `health` (v15 on), an open circuit lets one entry go as its probe once it is due
    /// and nothing of the origin is in flight (``OriginFlowBook``), tagged `probe`; its origin
    /// is reported as paused (a drainer gives back what it holds of it), its next probe counts
    /// towards how long until a held origin frees, and a row that holds a circuit, failures or a
    /// threshold is not deleted.
    static func flowClaim(
        _ schema: String, candidates: String, returning: String, patterns: Bool = false, refill: Bool = false, health: Bool = false
    ) -> String {
        let spare = refill ? " + \(OriginFlow.timeTolerance)" : ""
        let inflight = """
            (SELECT count(*) FROM "\(schema)".entry AS i WHERE i.state = 'inflight' AND "\(schema)".origin_of(i.url) = f.origin)
            """
        // An open circuit: nothing until its probe is due and nothing is in flight, then one.
        let circuit = health ? """
             WHEN f.open_until IS NOT NULL AND (f.open_until > fleet OR \(inflight) > 0) THEN 0
            """ : ""
        let probeCap = health ? "CASE WHEN f.open_until IS NOT NULL THEN 1 ELSE 1000000 END,\n                    " : ""
        // What the row `f` lets its origin take now.
        let allowance = """
            CASE WHEN f.paused_until > fleet THEN 0\(circuit) ELSE least(
                                \(probeCap)CASE WHEN f.rate IS NULL THEN 1000000
                                    ELSE floor(least(f.burst, f.tokens + (greatest(0, fleet - f.refilled_at)\(spare)) * f.rate)) END,
                                CASE WHEN f.cap IS NULL AND f.shrunk_to IS NULL THEN 1000000
                                    ELSE greatest(0, least(coalesce(f.cap, 1000000), coalesce(f.shrunk_to, 1000000)) - (SELECT count(*)
                                        FROM "\(schema)".entry AS i WHERE i.state = 'inflight' AND "\(schema)".origin_of(i.url) = f.origin)) END) END
            """
        // The claim order's filter and order apart: a probe takes the first of its origin's
        // entries by the same filter, and the walk never meets an open circuit's.
        let order = candidates.range(of: "ORDER BY")!
        let filter = String(candidates[..<order.lowerBound]), ordering = String(candidates[order.lowerBound...])
        let walked = health ? filter + "    AND NOT \"\(schema)\".origin_of(c.url) = ANY(open_origins)\n            " + ordering : candidates
        let derive = patterns ? """

                    IF patterned AND NOT allow ? cand.origin AND NOT cand.origin = ANY(unmatched) THEN
                        SELECT * INTO pat FROM "\(schema)".pattern_for(cand.origin);
                        IF pat.origin IS NULL THEN
                            unmatched := array_append(unmatched, cand.origin);
                        ELSE
                            -- A new bucket starts full; a row another claim has just made is taken as it is.
                            INSERT INTO "\(schema)".origin_flow (origin, rate, burst, cap\(health ? ", open_after" : ""), tokens, refilled_at)
                                VALUES (cand.origin, pat.rate, pat.burst, pat.cap\(health ? ", pat.open_after" : ""), coalesce(pat.burst, 0), fleet)
                                ON CONFLICT (origin) DO NOTHING;
                            SELECT \(allowance) INTO n FROM "\(schema)".origin_flow AS f WHERE f.origin = cand.origin;
                            allow := jsonb_set(allow, ARRAY[cand.origin], to_jsonb(n));
                        END IF;
                    END IF;
            """ : ""
        return """

            ELSIF claim_limit > 0 AND current_number >= 0 THEN
                -- One claim at a time reads and debits the flows: the fleet's limits hold.
                PERFORM 1 FROM "\(schema)".origin_flow ORDER BY origin FOR UPDATE;
                SELECT coalesce(jsonb_object_agg(f.origin, \(allowance)), '{}'::jsonb)
                    INTO allow FROM "\(schema)".origin_flow AS f\(patterns ? " WHERE position('*' in f.origin) = 0" : "");\(patterns ? """

                patterned := EXISTS (SELECT 1 FROM "\(schema)".origin_flow AS f WHERE position('*' in f.origin) > 0);
                unmatched := '{}';
        """ : "")
                taken := '{}'::jsonb;
                picked := '{}';
                held_origins := '{}';\(health ? """

                probed := '{}';
                open_origins := ARRAY(SELECT f.origin FROM "\(schema)".origin_flow AS f WHERE f.open_until IS NOT NULL AND position('*' in f.origin) = 0);
                -- An open circuit's origin is held until its next probe, whether an entry of it is due or not.
                held_origins := ARRAY(SELECT f.origin FROM "\(schema)".origin_flow AS f WHERE f.open_until > fleet AND position('*' in f.origin) = 0);
                -- Each open circuit's probe first (once due, nothing of the origin in flight): the first
                -- of its origin's entries in claim order.
                FOR probe_origin IN SELECT f.origin FROM "\(schema)".origin_flow AS f
                    WHERE f.open_until <= fleet AND position('*' in f.origin) = 0 AND \(inflight) = 0 ORDER BY f.origin COLLATE "C"
                LOOP
                    EXIT WHEN cardinality(picked) >= claim_limit;
                    cand_id := NULL;
                    SELECT c.id INTO cand_id FROM "\(schema)".entry AS c
        \(filter)            AND "\(schema)".origin_of(c.url) = probe_origin
                    \(ordering)
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                    CONTINUE WHEN cand_id IS NULL;
                    IF (allow ->> probe_origin)::numeric < 1 THEN
                        -- Not among the origins held yet: those are the circuits whose probe is not due.
                        held_origins := array_append(held_origins, probe_origin);
                        CONTINUE;
                    END IF;
                    allow := jsonb_set(allow, ARRAY[probe_origin], to_jsonb((allow ->> probe_origin)::numeric - 1));
                    taken := jsonb_set(taken, ARRAY[probe_origin], to_jsonb(coalesce((taken ->> probe_origin)::numeric, 0) + 1));
                    picked := array_append(picked, cand_id);
                    probed := array_append(probed, cand_id);
                END LOOP;
        """ : "")
                FOR cand IN
                    SELECT c.id, "\(schema)".origin_of(c.url) AS origin FROM "\(schema)".entry AS c
        \(walked)
                    LIMIT claim_limit + 4096
                    FOR UPDATE SKIP LOCKED
                LOOP\(health ? "\n                    EXIT WHEN cardinality(picked) >= claim_limit;" : "")\(derive)
                    IF allow ? cand.origin THEN
                        IF (allow ->> cand.origin)::numeric < 1 THEN
                            IF NOT cand.origin = ANY(held_origins) THEN held_origins := array_append(held_origins, cand.origin); END IF;
                            CONTINUE;
                        END IF;
                        allow := jsonb_set(allow, ARRAY[cand.origin], to_jsonb((allow ->> cand.origin)::numeric - 1));
                        taken := jsonb_set(taken, ARRAY[cand.origin], to_jsonb(coalesce((taken ->> cand.origin)::numeric, 0) + 1));
                    END IF;
                    picked := array_append(picked, cand.id);
                    EXIT WHEN cardinality(picked) >= claim_limit;
                END LOOP;
                UPDATE "\(schema)".origin_flow AS f
                    SET tokens = least(f.burst, f.tokens + greatest(0, fleet - f.refilled_at) * f.rate) - (taken ->> f.origin)::double precision,
                        refilled_at = \(refill ? "greatest(f.refilled_at, fleet)" : "fleet")
                    WHERE f.rate IS NOT NULL AND taken ? f.origin;
                DELETE FROM "\(schema)".origin_flow
                    WHERE (paused_until IS NULL OR paused_until <= fleet) AND shrunk_to IS NULL AND rate IS NULL AND cap IS NULL\(
                        health ? " AND origin_flow.open_after IS NULL AND failures = 0 AND open_until IS NULL" : "");
                -- The origins paused now\(health ? " or whose circuit is open" : ""): a drainer gives back what it holds of them.
                o_id := 0;
                FOR o_url IN SELECT f.origin FROM "\(schema)".origin_flow AS f WHERE f.paused_until > fleet\(health ? " OR f.open_until IS NOT NULL" : "") LOOP
                    o_tag := 'paused';
                    RETURN NEXT;
                END LOOP;
                IF cardinality(held_origins) > 0 THEN
                    SELECT min(CASE WHEN f.paused_until > fleet THEN f.paused_until - fleet
                        WHEN f.rate IS NOT NULL AND least(f.burst, f.tokens + greatest(0, fleet - f.refilled_at) * f.rate) < 1
                        THEN (1 - least(f.burst, f.tokens + greatest(0, fleet - f.refilled_at) * f.rate)) / f.rate END)\(
                            health ? ", min(CASE WHEN f.open_until > fleet THEN f.open_until - fleet END)" : "")
                        INTO soonest\(health ? ", probe_soonest" : "") FROM "\(schema)".origin_flow AS f WHERE f.origin = ANY(held_origins);
                    o_id := 0;
                    o_next_attempt_at := soonest;\(health ? "\n                    o_finished_at := probe_soonest;" : "")
                    o_tag := 'held';
                    RETURN NEXT;
                END IF;
                RETURN QUERY WITH claimed AS (
                    UPDATE "\(schema)".entry AS e SET state = 'inflight', lease_owner = claim_owner, lease_drainer = current_number,
                        lease_expires_at = lease_until, last_attempt_at = fleet
                    WHERE e.id = ANY(picked)
        \(returning)
                )
                SELECT claimed.*, 'claimed' FROM claimed;\(health ? """

                o_tag := 'probe';
                FOR o_id IN SELECT unnest(probed) LOOP
                    RETURN NEXT;
                END LOOP;
        """ : "")
        """
    }
}
