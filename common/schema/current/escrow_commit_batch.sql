-- SPDX-License-Identifier: Apache-2.0
-- escrow_commit_batch - one segment node's group commit, one call per batch:
-- its new holds, hold transitions (converted, cancelled, expired, extended,
-- with who caused them), the transfers it gives or receives, and its
-- segments' counter deltas, in one transaction under the segments' epoch
-- fence. Returns the rows the node settles its memory with (reserves not
-- accepted, transfer outcomes). Errors: ES001 a segment's epoch moved on
-- (nothing is written), ES002 the node's memory diverged from the record,
-- ES003 a transfer outside the batch's segments.
--
-- As of migration 0020_segment_lock_order. First 0002_commit_batch (the
-- contract); 0004 added t_actor and the transfers (x_*); 0007 kept the
-- contract and cut the work per batch; 0012 looks idempotency keys up
-- across the window's day partitions; 0015 inserts new holds without ON
-- CONFLICT unless a key collides and looks the keys up one index probe
-- each; 0017 probes the hash index; 0020 locks the segments rows lowest id
-- first. Each migration's header explains its part.
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_commit_batch(
    p_batch   bigint,
    s_id      bigint[], s_epoch bigint[], s_d_avail bigint[], s_d_held bigint[],
    s_d_sold  bigint[], s_hold_seq bigint[],
    r_hold    bigint[], r_seg bigint[], r_tenant text[], r_item text[], r_buyer text[],
    r_qty     integer[], r_key text[], r_hash bigint[], r_expires_ms bigint[],
    r_limit   integer[], r_epoch bigint[],
    t_hold    bigint[], t_kind text[], t_sold integer[], t_expires_ms bigint[],
    t_actor   text[],
    x_id      bigint[], x_kind text[], x_seg bigint[], x_qty bigint[])
RETURNS TABLE (o_req_hold bigint, o_outcome text, o_hold_id bigint, o_segment_id bigint,
               o_item_id text, o_buyer_id text, o_qty integer, o_qty_sold integer,
               o_state text, o_expires_ms bigint, o_extended boolean, o_hash bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_dup    bigint[];
    v_lim    bigint[];
    v_n      bigint;
    v_xid    bigint[];
    v_xstate text[];
    v_xqty   bigint[];
    v_xseg   bigint[];
    v_xdelta bigint[];
    v_day    date;
    v_from   date;
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(x_seg) AS x(seg) WHERE NOT (x.seg = ANY (s_id))) THEN
        RAISE EXCEPTION 'escrow: a transfer names a segment outside the batch'
            USING ERRCODE = 'ES003';
    END IF;

    -- 1. new holds. A key is unique within the idempotency window: looked up
    -- in the window's day partitions (after the day gate, in a fresh
    -- snapshot), and the unique index on (tenant, key, day) settles two
    -- batches of the same day. A key seen only before the window is new.
    v_day := escrow_today();
    SELECT v_day - s.window_days INTO STRICT v_from FROM retention_settings s;
    v_dup := '{}';
    IF cardinality(r_hold) > 0 THEN
        PERFORM escrow_day_gate(v_day);
        -- OFFSET 0 keeps the EXISTS a subplan run per key: an index probe in
        -- each partition of the window. As a semi join the planner may hash
        -- the window's holds instead (it does while the day's partition
        -- looks small to it) and then reads every hold of the window in
        -- every batch. The probe goes through holds_idempotency_hash (one
        -- bucket page for a new key); the tenant is compared under COLLATE
        -- "C" (for text the same equality) so that the planner cannot take
        -- the 3-column btree holds_idempotency_key instead, a descent of 3
        -- levels it prefers in a vacuumed day (an index-only scan).
        SELECT COALESCE(array_agg(r.hold_id), '{}') INTO v_dup
        FROM unnest(r_hold, r_tenant, r_key) AS r(hold_id, tenant_id, key)
        WHERE EXISTS (SELECT 1 FROM holds h
                      WHERE h.idempotency_key = r.key
                        AND h.tenant_id = r.tenant_id COLLATE "C"
                        AND h.created_day BETWEEN v_from AND v_day
                      OFFSET 0);
    END IF;
    -- A plain INSERT first: ON CONFLICT's speculative insertion writes one
    -- more WAL record per row (the confirmation) and probes the key's index
    -- once more. Only a key that a concurrent batch inserted after the
    -- look-up above (or a key twice in this batch) violates the unique
    -- index; then the rows go again with ON CONFLICT, which makes those
    -- duplicates. A hold id violation (holds_pkey) is raised either way.
    IF cardinality(r_hold) > cardinality(v_dup) THEN
        BEGIN
            INSERT INTO holds (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, state,
                               expires_at, idempotency_key, request_hash, epoch, created_day)
            SELECT r.hold_id, r.tenant_id, r.item_id, r.segment_id, r.buyer_id, r.qty, 'held',
                   to_timestamp(r.expires_at / 1000.0), r.key, r.hash, r.epoch, v_day
            FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty, r_key, r_hash,
                        r_expires_ms, r_epoch)
                 AS r(hold_id, segment_id, tenant_id, item_id, buyer_id, qty, key, hash,
                      expires_at, epoch)
            WHERE NOT (r.hold_id = ANY (v_dup));
        EXCEPTION WHEN unique_violation THEN
            WITH r AS (
                SELECT * FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty, r_key,
                                     r_hash, r_expires_ms, r_epoch)
                       AS r(hold_id, segment_id, tenant_id, item_id, buyer_id, qty, key, hash,
                            expires_at, epoch)
                WHERE NOT (r.hold_id = ANY (v_dup))
            ), ins AS (
                INSERT INTO holds AS h (hold_id, tenant_id, item_id, segment_id, buyer_id, qty,
                                        state, expires_at, idempotency_key, request_hash, epoch,
                                        created_day)
                SELECT r.hold_id, r.tenant_id, r.item_id, r.segment_id, r.buyer_id, r.qty,
                       'held', to_timestamp(r.expires_at / 1000.0), r.key, r.hash, r.epoch,
                       v_day
                FROM r
                ON CONFLICT ON CONSTRAINT holds_idempotency_key DO NOTHING
                RETURNING h.hold_id
            )
            SELECT v_dup || COALESCE(array_agg(r.hold_id), '{}') INTO v_dup
            FROM r WHERE r.hold_id NOT IN (SELECT ins.hold_id FROM ins);
        END;
    END IF;

    IF cardinality(v_dup) > 0 THEN
        RETURN QUERY
        SELECT r.hold_id, 'duplicate'::text, h.hold_id, h.segment_id, h.item_id, h.buyer_id,
               h.qty, h.qty_sold, h.state,
               round(extract(epoch FROM h.expires_at) * 1000)::bigint, h.extended,
               h.request_hash
        FROM unnest(r_hold, r_tenant, r_key) AS r(hold_id, tenant_id, key)
        JOIN holds h ON h.tenant_id = r.tenant_id AND h.idempotency_key = r.key
                    AND h.created_day BETWEEN v_from AND v_day
        WHERE r.hold_id = ANY (v_dup);
    END IF;

    -- 2. per-buyer maximum (the database is the arbiter across segments)
    WITH r AS (
        SELECT * FROM unnest(r_hold, r_tenant, r_item, r_buyer, r_qty, r_limit)
               AS r(hold_id, tenant_id, item_id, buyer_id, qty, lim)
        WHERE r.lim > 0 AND NOT (r.hold_id = ANY (v_dup))
    ), up AS (
        INSERT INTO buyer_usage AS b (tenant_id, item_id, buyer_id, used, max_qty)
        SELECT r.tenant_id, r.item_id, r.buyer_id, r.qty, r.lim FROM r
        ON CONFLICT (tenant_id, item_id, buyer_id) DO UPDATE
            SET used = b.used + EXCLUDED.used, max_qty = EXCLUDED.max_qty
            WHERE b.used + EXCLUDED.used <= EXCLUDED.max_qty
        RETURNING b.tenant_id, b.item_id, b.buyer_id
    )
    SELECT COALESCE(array_agg(r.hold_id), '{}') INTO v_lim
    FROM r WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.tenant_id = r.tenant_id
                             AND up.item_id = r.item_id AND up.buyer_id = r.buyer_id);

    IF cardinality(v_lim) > 0 THEN
        EXECUTE 'DELETE FROM holds h WHERE h.hold_id = ANY ($1) AND h.created_day = $2'
            USING v_lim, v_day;
        RETURN QUERY
        SELECT l, 'buyer_limit'::text, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
               NULL::integer, NULL::integer, NULL::text, NULL::bigint, NULL::boolean,
               NULL::bigint
        FROM unnest(v_lim) AS l;
    END IF;

    -- 3. outbox events of the accepted reserves, from the arguments
    INSERT INTO outbox (tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty, actor)
    SELECT r.tenant_id, r.item_id, r.seg, r.hold_id, r.buyer_id, 'held', r.qty, NULL
    FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty)
         AS r(hold_id, seg, tenant_id, item_id, buyer_id, qty)
    WHERE NOT (r.hold_id = ANY (v_dup)) AND NOT (r.hold_id = ANY (v_lim));

    -- 4. transitions, only from 'held'; their outbox events and the units
    -- that went back to the shelf (no longer counted against the buyer) come
    -- from the updated rows themselves. Planned per call (EXECUTE): a cached
    -- generic plan made while the table was small scans it sequentially.
    IF cardinality(t_hold) > 0 THEN
        EXECUTE $q$
        WITH t AS (
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::bigint[],
                                 $5::text[]) AS t(hold_id, kind, sold, expires, actor)
        ), u AS (
            UPDATE holds h
            SET state = CASE WHEN t.kind = 'extended' THEN 'held' ELSE t.kind END,
                qty_sold = CASE WHEN t.kind = 'converted' THEN t.sold ELSE 0 END,
                ended_at = CASE WHEN t.kind = 'extended' THEN NULL ELSE clock_timestamp() END,
                expires_at = CASE WHEN t.expires > 0 THEN to_timestamp(t.expires / 1000.0)
                                  ELSE h.expires_at END,
                extended = h.extended OR t.kind = 'extended'
            FROM t
            WHERE h.hold_id = t.hold_id AND h.state = 'held'
              AND NOT (t.kind = 'extended' AND h.extended)
            RETURNING h.tenant_id, h.item_id, h.segment_id, h.hold_id, h.buyer_id, h.qty,
                      h.qty_sold, t.kind, t.actor
        ), ev AS (
            INSERT INTO outbox (tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty,
                                actor)
            SELECT u.tenant_id, u.item_id, u.segment_id, u.hold_id, u.buyer_id, u.kind,
                   CASE u.kind WHEN 'converted' THEN u.qty_sold ELSE u.qty END,
                   NULLIF(u.actor, '')
            FROM u
        ), bu AS (
            UPDATE buyer_usage b SET used = b.used - x.ret
            FROM (SELECT u.tenant_id, u.item_id, u.buyer_id, sum(u.qty - u.qty_sold) AS ret
                  FROM u WHERE u.kind <> 'extended'
                  GROUP BY u.tenant_id, u.item_id, u.buyer_id) x
            WHERE b.tenant_id = x.tenant_id AND b.item_id = x.item_id
              AND b.buyer_id = x.buyer_id AND x.ret > 0
        )
        SELECT count(*) FROM u
        $q$ INTO v_n USING t_hold, t_kind, t_sold, t_expires_ms, t_actor;
        IF v_n <> cardinality(t_hold) THEN
            RAISE EXCEPTION 'escrow: hold state diverged (% of % transitions applied)',
                v_n, cardinality(t_hold) USING ERRCODE = 'ES002';
        END IF;
    END IF;

    -- 5. transfers: each step only from the state that allows it
    IF cardinality(x_id) > 0 THEN
        WITH x AS (
            SELECT * FROM unnest(x_id, x_kind, x_seg, x_qty) AS x(id, kind, seg, qty)
        ), g AS (
            UPDATE transfers t
            SET state = CASE WHEN x.qty > 0 THEN 'sent' ELSE 'cancelled' END,
                qty = CASE WHEN x.qty > 0 THEN x.qty ELSE t.qty END,
                sent_at = clock_timestamp(),
                sent_batch = p_batch
            FROM x
            WHERE x.kind = 'give' AND t.transfer_id = x.id AND t.state = 'planned'
              AND t.from_segment = x.seg AND x.qty >= 0
            RETURNING t.transfer_id AS id, t.state, x.qty AS moved, x.seg, -x.qty AS delta,
                      t.tenant_id, t.item_id
        ), r AS (
            UPDATE transfers t
            SET state = 'received', received_at = clock_timestamp(), received_batch = p_batch
            FROM x
            WHERE x.kind = 'receive' AND t.transfer_id = x.id AND t.state = 'sent'
              AND t.to_segment = x.seg
            RETURNING t.transfer_id AS id, t.state, t.qty AS moved, x.seg, t.qty AS delta,
                      t.tenant_id, t.item_id
        ), moved AS (
            SELECT * FROM g UNION ALL SELECT * FROM r
        ), ev AS (
            INSERT INTO outbox (tenant_id, item_id, segment_id, kind, qty)
            SELECT m.tenant_id, m.item_id, m.seg, 'transfer_' || m.state, m.moved FROM moved m
        )
        SELECT COALESCE(array_agg(m.id), '{}'), COALESCE(array_agg(m.state), '{}'),
               COALESCE(array_agg(m.moved), '{}'), COALESCE(array_agg(m.seg), '{}'),
               COALESCE(array_agg(m.delta), '{}')
        INTO v_xid, v_xstate, v_xqty, v_xseg, v_xdelta
        FROM moved m;

        RETURN QUERY
        SELECT x.id, 'xfer'::text, NULL::bigint, x.seg, NULL::text, NULL::text,
               COALESCE(m.moved, 0)::integer, NULL::integer, COALESCE(m.state, 'stale'),
               NULL::bigint, NULL::boolean, NULL::bigint
        FROM unnest(x_id, x_seg) AS x(id, seg)
        LEFT JOIN unnest(v_xid, v_xstate, v_xqty) AS m(id, state, moved) ON m.id = x.id;
    ELSE
        v_xseg := '{}';
        v_xdelta := '{}';
    END IF;

    -- 6. the hot rows, last: deltas under the epoch fence. Locked lowest
    -- segment_id first, as every statement that changes several segments
    -- rows does (0020): the UPDATE below locks them in whatever order its
    -- plan reads them, and a coordinator's write to the same rows in
    -- another order (a collapse) would deadlock with it.
    IF cardinality(s_id) > 1 THEN
        PERFORM 1 FROM segments s WHERE s.segment_id = ANY (s_id)
        ORDER BY s.segment_id FOR NO KEY UPDATE;
    END IF;
    UPDATE segments s
    SET available = s.available + d.d_avail + COALESCE(x.q, 0) + COALESCE(xd.d, 0),
        held      = s.held + d.d_held - COALESCE(x.q, 0),
        sold      = s.sold + d.d_sold,
        hold_seq  = GREATEST(s.hold_seq, d.seq),
        last_batch = p_batch
    FROM unnest(s_id, s_epoch, s_d_avail, s_d_held, s_d_sold, s_hold_seq)
             AS d(segment_id, epoch, d_avail, d_held, d_sold, seq)
    LEFT JOIN (SELECT r.seg, sum(r.qty) AS q
               FROM unnest(r_hold, r_seg, r_qty) AS r(hold_id, seg, qty)
               WHERE r.hold_id = ANY (v_dup) OR r.hold_id = ANY (v_lim)
               GROUP BY r.seg) x ON x.seg = d.segment_id
    LEFT JOIN (SELECT m.seg, sum(m.delta) AS d
               FROM unnest(v_xseg, v_xdelta) AS m(seg, delta)
               GROUP BY m.seg) xd ON xd.seg = d.segment_id
    WHERE s.segment_id = d.segment_id AND s.epoch = d.epoch AND s.state <> 'retired';
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n <> cardinality(s_id) THEN
        RAISE EXCEPTION 'escrow: segment fenced (% of % segments at the expected epoch)',
            v_n, cardinality(s_id) USING ERRCODE = 'ES001';
    END IF;
END
$fn$;
