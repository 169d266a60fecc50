-- SPDX-License-Identifier: Apache-2.0
-- escrow_holds_close - closes the days of holds that can no longer change,
-- oldest first and without a gap, up to the last day (UTC) that ended an
-- hour ago or more: a day is closed once no batch writes it (it waits for
-- every batch that holds the day gate's lock: a batch takes it within
-- moments of its start, so none can come later) and it has no live hold;
-- per segment its holds and units sold
-- are added to holds_closed and holds_closed_mark.through moves to it.
-- Stops at the first day with a live hold. Returns the days it closed.
-- segment_holds_agree_recent (the coordinator's monitor) reads the closed
-- days from holds_closed instead of the holds. Called by
-- escrow_retention_run.
--
-- As of migration 0016_holds_closed.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

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
