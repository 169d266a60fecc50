-- SPDX-License-Identifier: Apache-2.0
-- escrow_retention_plan - every partition of holds and outbox, oldest
-- first, with its rows (exact below 256 MB, else the planner's estimate),
-- its size on disk, and what a retention run would do with it and why:
--   holds:  drop once its last day is older than the idempotency window
--           (retention_settings.window_days before today) and no hold in
--           it is live (a partition of several days says which);
--   outbox: drop once its day is older than the window and every event-feed
--           consumer has read all of it, or anyway ('forced', naming the
--           consumers that had not) once it is older than feed_max_days.
-- Default partitions are never dropped. Reads only.
--
-- As of migration 0019_holds_partition_width (0012_retention; 0019 reads a
-- partition's days from its bounds, escrow_partition_spans, and keeps it
-- until its last day leaves the window).
--
-- Checked against the migrations by tests/integration/schema_current.sh.

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
