-- SPDX-License-Identifier: Apache-2.0
-- 0019_holds_partition_width.sql - a new idempotency key is looked up in 2
-- partitions of holds instead of 8: holds partitions span several days
-- (retention_settings.holds_part_days, 7 by default) instead of one
-- (measured: docs/performance.md, "Holds table growth").
--
-- escrow_commit_batch looks every new key up in each partition of holds
-- that holds a day of the idempotency window: 8 day partitions with the
-- default 7 days. pg_stat_statements and EXPLAIN (ANALYZE, BUFFERS) on a
-- full window: the look-up is one hash bucket page per partition and key,
-- about 2.5 us each (a random page of a large index: the cost is memory,
-- not the plan; an = ANY array probe per partition costs the same), and it
-- was most of what a full window added to a hold. With partitions of
-- holds_part_days >= window_days days the window touches 2 partitions.
--
--   * retention_settings.holds_part_days (1 to 366, default 7): the days a
--     new holds partition spans, aligned on multiples of it from Monday
--     2000-01-03 (7: Monday to Sunday). The outbox keeps day partitions.
--   * escrow_partition_spans() reads each partition's days from its bounds
--     (holds_pYYYYMMDD is named after its first day); escrow_partitions_ensure
--     makes the spans, cut to fit between partitions that exist (the day
--     partitions made before this migration, or after a change of the width).
--   * Retention drops a holds partition once its LAST day is older than the
--     window (and it has no live hold): holds are kept window + up to
--     holds_part_days days (15 by default instead of 8), still a partition
--     at a time. escrow_retention_run takes only the closed days' sums out
--     of holds_closed (a partition can be closed in part).
--   * holds_day_brin, a BRIN index on created_day: the invariant monitor
--     (segment_holds_agree_recent) and escrow_holds_close read the days they
--     need from a partition of several days, not all of it. A BRIN index
--     costs an insert next to nothing (a range's summary changes only when a
--     new day starts in it).
--
-- Guarantees unchanged: the look-up still filters on created_day BETWEEN
-- the window's first day and today, the unique constraint stays (tenant,
-- key, created_day) and the day gate still settles midnight; only the
-- number of partitions the look-up probes and how long a partition lives
-- change.
--
-- Upgrading: the empty holds partitions from today on (the ones made ahead)
-- are dropped and made again with the new width, under an exclusive lock on
-- holds (writes wait for it: run `escrowctl migrate` outside a sale);
-- partitions with rows stay as they are, so the window reaches 2 partitions
-- once the day partitions of before the upgrade have left it (up to 15 days
-- later). Building the BRIN index reads every partition once.

ALTER TABLE retention_settings
    ADD COLUMN holds_part_days integer NOT NULL DEFAULT 7
        CONSTRAINT retention_holds_part_range CHECK (holds_part_days BETWEEN 1 AND 366);

CREATE INDEX holds_day_brin ON holds USING brin (created_day);

-- (escrow_partition_spans, as in current/escrow_partition_spans.sql)
CREATE OR REPLACE FUNCTION escrow_partition_spans()
RETURNS TABLE (tbl text, part text, lo date, hi date)
LANGUAGE sql STABLE SET datestyle TO 'ISO, YMD' AS $$
    SELECT pp.relname::text, c.relname::text, b.m[1]::date, b.m[2]::date
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_class pp ON pp.oid = i.inhparent
    CROSS JOIN LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                            'FROM \(''([0-9-]+)''\) TO \(''([0-9-]+)''\)') AS m) b
    WHERE pp.relname IN ('holds', 'outbox') AND pp.relnamespace = 'public'::regnamespace
$$;

-- (escrow_partitions_ensure, as in current/escrow_partitions_ensure.sql)
CREATE OR REPLACE FUNCTION escrow_partitions_ensure(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_tbl   text;
    v_width integer;
    v_day   date;
    v_lo    date;
    v_hi    date;
    v_floor date;
    v_n     integer := 0;
BEGIN
    FOREACH v_tbl IN ARRAY ARRAY['holds', 'outbox'] LOOP
        v_width := 1;
        IF v_tbl = 'holds' THEN
            SELECT s.holds_part_days INTO STRICT v_width FROM retention_settings s;
        END IF;
        v_day := p_from;
        v_floor := NULL;
        WHILE v_day <= p_to LOOP
            -- a partition that holds the day already: on past its last day
            SELECT s.hi INTO v_hi FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.lo <= v_day AND v_day < s.hi;
            IF FOUND THEN
                v_day := v_hi;
                CONTINUE;
            END IF;
            v_lo := date '2000-01-03' + floor((v_day - date '2000-01-03') / v_width::numeric)::integer * v_width;
            v_hi := v_lo + v_width;
            SELECT GREATEST(v_lo, max(s.hi), v_floor) INTO v_lo FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.hi <= v_day;
            SELECT LEAST(v_hi, min(s.lo)) INTO v_hi FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.lo > v_day;
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               v_tbl || '_p' || to_char(v_lo, 'YYYYMMDD'), v_tbl, v_lo, v_hi);
                v_n := v_n + 1;
                v_day := v_hi;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'escrow: % rows of % to % are in %_default; partition not made',
                    v_tbl, v_lo, v_hi - 1, v_tbl;
                v_day := v_day + 1;
                v_floor := v_day;
            END;
        END LOOP;
    END LOOP;
    RETURN v_n;
END
$$;

-- (escrow_retention_plan, as in current/escrow_retention_plan.sql)
CREATE OR REPLACE FUNCTION escrow_retention_plan()
RETURNS TABLE (tbl text, part text, part_day date, est_rows bigint, bytes bigint,
               action text, reason text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_set   retention_settings;
    v_today date := escrow_today();
    v_n     bigint;
    v_lag   text;
    p       record;
BEGIN
    SELECT * INTO STRICT v_set FROM retention_settings;
    FOR p IN
        SELECT sp.tbl AS parent, sp.part AS name, c.reltuples, sp.lo AS d, sp.hi - 1 AS last
        FROM escrow_partition_spans() sp
        JOIN pg_class c ON c.relname = sp.part AND c.relnamespace = 'public'::regnamespace
        ORDER BY 1, 4 NULLS LAST
    LOOP
        tbl := p.parent;
        part := p.name;
        part_day := p.d;
        bytes := pg_total_relation_size(p.name::regclass);
        IF pg_relation_size(p.name::regclass) < 256 * 1024 * 1024 OR p.reltuples < 0 THEN
            EXECUTE format('SELECT count(*) FROM %I', p.name) INTO est_rows;
        ELSE
            est_rows := p.reltuples::bigint;
        END IF;
        action := 'keep';
        IF p.d IS NULL THEN
            reason := 'default partition: rows of a day without a partition';
        ELSIF p.last >= v_today THEN
            reason := 'today or ahead';
        ELSIF p.last >= v_today - v_set.window_days THEN
            reason := 'inside the idempotency window';
        ELSIF p.parent = 'holds' THEN
            EXECUTE format('SELECT count(*) FROM %I WHERE state = ''held''', p.name) INTO v_n;
            IF v_n > 0 THEN
                reason := v_n || ' live holds';
            ELSE
                action := 'drop';
                reason := 'older than the window, no live hold';
            END IF;
        ELSE
            EXECUTE format(
                'SELECT string_agg(c.tenant_id || ''/'' || c.consumer, '', '' '
                'ORDER BY c.tenant_id, c.consumer) FROM feed_consumers c WHERE EXISTS ('
                'SELECT 1 FROM %I o WHERE o.tenant_id = c.tenant_id '
                'AND (c.item_id IS NULL OR o.item_id = c.item_id) '
                'AND (o.txid, o.event_id) > (c.cursor_txid, c.cursor_event_id))', p.name)
                INTO v_lag;
            IF v_lag IS NULL THEN
                action := 'drop';
                reason := 'older than the window, read by every consumer';
            ELSIF p.last < v_today - v_set.feed_max_days THEN
                action := 'drop';
                reason := 'forced: older than feed_max_days, unread by ' || v_lag;
            ELSE
                reason := 'unread by ' || v_lag;
            END IF;
        END IF;
        IF p.last > p.d THEN
            reason := reason || ' (days ' || p.d || ' to ' || p.last || ')';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- (escrow_retention_run, as in current/escrow_retention_run.sql)
CREATE OR REPLACE FUNCTION escrow_retention_run()
RETURNS TABLE (tbl text, part text, part_day date, est_rows bigint, bytes bigint,
               action text, reason text)
LANGUAGE plpgsql AS $$
DECLARE
    p record;
BEGIN
    PERFORM pg_advisory_xact_lock(1163085896, 0);
    PERFORM set_config('lock_timeout', '5s', true);
    PERFORM escrow_partitions_ensure(escrow_today(),
                                     escrow_today() + (SELECT s.ahead_days
                                                       FROM retention_settings s));
    PERFORM escrow_holds_close();
    FOR p IN SELECT * FROM escrow_retention_plan() x WHERE x.action = 'drop' LOOP
        IF p.tbl = 'holds' THEN
            EXECUTE format(
                'WITH g AS (SELECT h.segment_id, count(*) AS n, '
                'COALESCE(sum(h.qty_sold) FILTER (WHERE h.state = ''converted''), 0) AS sold, '
                'count(*) FILTER (WHERE h.created_day <= $1) AS cn, '
                'COALESCE(sum(h.qty_sold) FILTER (WHERE h.state = ''converted'' '
                'AND h.created_day <= $1), 0) AS csold '
                'FROM %I h GROUP BY h.segment_id), '
                'c AS (UPDATE holds_closed t SET holds = t.holds - g.cn, sold = t.sold - g.csold '
                'FROM g WHERE t.segment_id = g.segment_id AND g.cn > 0) '
                'INSERT INTO holds_retired AS t (segment_id, holds, sold) '
                'SELECT g.segment_id, g.n, g.sold FROM g ON CONFLICT (segment_id) DO UPDATE '
                'SET holds = t.holds + EXCLUDED.holds, sold = t.sold + EXCLUDED.sold', p.part)
                USING (SELECT m.through FROM holds_closed_mark m);
        END IF;
        EXECUTE format('DROP TABLE %I', p.part);
        INSERT INTO retention_log (tbl, partition, day, rows, forced)
        VALUES (p.tbl, p.part, p.part_day, p.est_rows,
                CASE WHEN p.reason LIKE 'forced:%' THEN p.reason END);
        tbl := p.tbl;
        part := p.part;
        part_day := p.part_day;
        est_rows := p.est_rows;
        bytes := p.bytes;
        action := 'dropped';
        reason := p.reason;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The empty partitions of holds from today on, made again with the width.
LOCK TABLE holds IN ACCESS EXCLUSIVE MODE;
DO $$
DECLARE
    p   record;
    v_n bigint;
BEGIN
    FOR p IN SELECT s.part FROM escrow_partition_spans() s
             WHERE s.tbl = 'holds' AND s.lo >= escrow_today() ORDER BY s.lo LOOP
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I LIMIT 1) x', p.part) INTO v_n;
        IF v_n = 0 THEN
            EXECUTE format('DROP TABLE %I', p.part);
        END IF;
    END LOOP;
END
$$;
SELECT escrow_partitions_ensure(escrow_today(),
                                escrow_today() + (SELECT s.ahead_days FROM retention_settings s));
