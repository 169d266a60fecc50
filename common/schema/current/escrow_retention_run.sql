-- SPDX-License-Identifier: Apache-2.0
-- escrow_retention_run - one retention run, in one transaction: creates the
-- partitions from today to ahead_days ahead, closes the days of holds that
-- can no longer change (escrow_holds_close), then drops every partition
-- escrow_retention_plan() marks 'drop' (DROP TABLE: a whole partition, no
-- row deletes). Before a holds partition goes, its holds and sold units are
-- added to holds_retired per segment, so segment_holds_agree still adds up
-- (and those of its closed days taken out of holds_closed: a partition of
-- several days can be closed in part).
-- Each drop is written to retention_log. Returns the dropped partitions.
-- One run at a time (an advisory lock); lock_timeout 5 s, so that a run
-- never queues the commit path behind a long transaction for longer.
--
-- As of migration 0019_holds_partition_width; first 0012_retention, 0016
-- moved closed sums.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

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
