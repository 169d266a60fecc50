-- SPDX-License-Identifier: Apache-2.0
-- 0016_holds_closed.sql - the coordinator's invariant monitor reads only the
-- holds that can still change, so its cost no longer grows with history.
--
-- segment_holds_agree sums every hold of every segment; the monitor ran it
-- every --check-ms, a scan of the whole idempotency window's history. A day
-- of holds stops changing once no batch can write it any more and it has no
-- live hold left: new holds go to today's partition and an ended hold never
-- changes again.
--
--   * escrow_holds_close() closes such days, oldest first and without a gap,
--     up to the last day that ended an hour ago or more (UTC): per segment,
--     the day's holds and units sold are added to holds_closed, and
--     holds_closed_mark.through moves to the day. It first waits for every
--     batch that still writes the day (the day gate's lock, taken and let go)
--     and stops at the first day that still has a live hold. escrow_retention_run() calls it before it drops anything, and
--     moves a dropped closed partition's sums from holds_closed to
--     holds_retired.
--   * segment_holds_agree_recent is segment_holds_agree with the closed days
--     read from holds_closed: partition pruning (at run time, from the mark)
--     leaves their partitions out, and a live hold is never in one. The
--     monitor reads it; escrowctl check still reads every hold.

CREATE TABLE holds_closed (
    segment_id bigint PRIMARY KEY,
    holds      bigint NOT NULL DEFAULT 0 CONSTRAINT holds_closed_holds_nonneg CHECK (holds >= 0),
    sold       bigint NOT NULL DEFAULT 0 CONSTRAINT holds_closed_sold_nonneg CHECK (sold >= 0)
);

-- The last closed day (NULL: none yet).
CREATE TABLE holds_closed_mark (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT holds_closed_mark_one_row CHECK (only_row),
    through  date
);
INSERT INTO holds_closed_mark DEFAULT VALUES;

CREATE TRIGGER coord_fence BEFORE INSERT OR UPDATE OR DELETE ON holds_closed
    FOR EACH STATEMENT WHEN (current_setting('escrow.coord_epoch', true) <> '')
    EXECUTE FUNCTION escrow_coord_fence();
CREATE TRIGGER coord_fence BEFORE INSERT OR UPDATE OR DELETE ON holds_closed_mark
    FOR EACH STATEMENT WHEN (current_setting('escrow.coord_epoch', true) <> '')
    EXECUTE FUNCTION escrow_coord_fence();

-- (escrow_holds_close, as in current/escrow_holds_close.sql)
CREATE OR REPLACE FUNCTION escrow_holds_close() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_mark date;
    v_day  date;
    -- the days that ended an hour ago or more
    v_last date := (now() AT TIME ZONE 'UTC' - interval '1 hour')::date - 1;
    v_n    integer := 0;
BEGIN
    SELECT m.through INTO STRICT v_mark FROM holds_closed_mark m FOR UPDATE;
    IF v_mark IS NULL THEN
        -- the first run: from the oldest day that has holds
        SELECT min(d) - 1 INTO v_mark FROM (
            SELECT to_date(right(c.relname, 8), 'YYYYMMDD') AS d
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'holds'::regclass AND c.relname ~ '_p[0-9]{8}$'
            UNION ALL SELECT min(created_day) FROM holds_default) x;
        IF v_mark IS NULL THEN
            RETURN 0;
        END IF;
    END IF;
    v_day := v_mark + 1;
    WHILE v_day <= v_last LOOP
        -- waits for every batch that writes holds of this day (escrow_day_gate)
        PERFORM pg_advisory_lock(1163085895, v_day - date '2000-01-01'),
                pg_advisory_unlock(1163085895, v_day - date '2000-01-01');
        EXIT WHEN EXISTS (SELECT 1 FROM holds h WHERE h.created_day = v_day AND h.state = 'held');
        INSERT INTO holds_closed AS t (segment_id, holds, sold)
        SELECT h.segment_id, count(*),
               COALESCE(sum(h.qty_sold) FILTER (WHERE h.state = 'converted'), 0)
        FROM holds h WHERE h.created_day = v_day GROUP BY h.segment_id
        ON CONFLICT (segment_id) DO UPDATE
        SET holds = t.holds + EXCLUDED.holds, sold = t.sold + EXCLUDED.sold;
        v_mark := v_day;
        v_n := v_n + 1;
        v_day := v_day + 1;
    END LOOP;
    UPDATE holds_closed_mark SET through = v_mark;
    RETURN v_n;
END
$$;

-- (segment_holds_agree_recent, as in current/segment_holds_agree_recent.sql)
CREATE OR REPLACE VIEW segment_holds_agree_recent AS
SELECT s.segment_id, s.tenant_id, s.item_id, s.held, s.sold,
       COALESCE(h.live, 0) AS holds_live,
       COALESCE(h.sold, 0) + COALESCE(c.sold, 0) + COALESCE(r.sold, 0) AS holds_sold,
       s.held = COALESCE(h.live, 0)
       AND s.sold = COALESCE(h.sold, 0) + COALESCE(c.sold, 0) + COALESCE(r.sold, 0) AS ok
FROM segments s
LEFT JOIN (SELECT segment_id,
                  sum(qty) FILTER (WHERE state = 'held') AS live,
                  sum(qty_sold) FILTER (WHERE state = 'converted') AS sold
           FROM holds
           WHERE created_day >= COALESCE((SELECT m.through + 1 FROM holds_closed_mark m), '-infinity')
           GROUP BY segment_id) h USING (segment_id)
LEFT JOIN holds_closed c USING (segment_id)
LEFT JOIN holds_retired r USING (segment_id);

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
                'COALESCE(sum(h.qty_sold) FILTER (WHERE h.state = ''converted''), 0) AS sold '
                'FROM %I h GROUP BY h.segment_id), '
                'c AS (UPDATE holds_closed t SET holds = t.holds - g.n, sold = t.sold - g.sold '
                'FROM g WHERE t.segment_id = g.segment_id '
                'AND $1 <= (SELECT m.through FROM holds_closed_mark m)) '
                'INSERT INTO holds_retired AS t (segment_id, holds, sold) '
                'SELECT g.segment_id, g.n, g.sold FROM g ON CONFLICT (segment_id) DO UPDATE '
                'SET holds = t.holds + EXCLUDED.holds, sold = t.sold + EXCLUDED.sold', p.part)
                USING p.part_day;
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
