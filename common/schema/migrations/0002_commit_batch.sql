-- SPDX-License-Identifier: Apache-2.0
-- 0002_commit_batch.sql - one group-commit batch of a segment node.
--
-- A node decides in memory and sends its decisions here, one call per batch,
-- as parallel arrays (one round trip, one transaction). The function
--   1. inserts the new holds; a key that already has a hold is not an error
--      but the answer (ON CONFLICT ON CONSTRAINT holds_idempotency_key);
--   2. charges per-buyer usage for items with a per-buyer maximum; a buyer
--      over the limit gets his hold removed and the answer 'buyer_limit';
--   3. applies the hold transitions (converted / cancelled / expired /
--      extended), each only from 'held': a mismatch means the node's memory
--      diverged from the record and the whole batch is refused (ES002);
--   4. writes one outbox event per transition;
--   5. writes the segment counters last, as deltas under the epoch fence;
--      a segment whose epoch moved on refuses the whole batch (ES001).
-- It returns one row per reserve it did not accept. Units of those reserves
-- are put back into 'available' by the same delta write, so the node undoes
-- the same reserves in memory and both sides agree.
--
-- The caller keeps at most one reserve per (tenant, item, buyer) of a limited
-- item in one batch: ON CONFLICT DO UPDATE may not touch one row twice.

CREATE FUNCTION escrow_commit_batch(
    p_batch   bigint,
    s_id      bigint[], s_epoch bigint[], s_d_avail bigint[], s_d_held bigint[],
    s_d_sold  bigint[], s_hold_seq bigint[],
    r_hold    bigint[], r_seg bigint[], r_tenant text[], r_item text[], r_buyer text[],
    r_qty     integer[], r_key text[], r_hash bigint[], r_expires_ms bigint[],
    r_limit   integer[], r_epoch bigint[],
    t_hold    bigint[], t_kind text[], t_sold integer[], t_expires_ms bigint[])
RETURNS TABLE (o_req_hold bigint, o_outcome text, o_hold_id bigint, o_segment_id bigint,
               o_item_id text, o_buyer_id text, o_qty integer, o_qty_sold integer,
               o_state text, o_expires_ms bigint, o_extended boolean, o_hash bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_dup bigint[];
    v_lim bigint[];
    v_n   bigint;
BEGIN
    -- 1. new holds
    WITH r AS (
        SELECT * FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty, r_key, r_hash,
                             r_expires_ms, r_epoch)
               AS r(hold_id, segment_id, tenant_id, item_id, buyer_id, qty, key, hash,
                    expires_at, epoch)
    ), ins AS (
        INSERT INTO holds AS h (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, state,
                                expires_at, idempotency_key, request_hash, epoch)
        SELECT r.hold_id, r.tenant_id, r.item_id, r.segment_id, r.buyer_id, r.qty, 'held',
               to_timestamp(r.expires_at / 1000.0), r.key, r.hash, r.epoch
        FROM r
        ON CONFLICT ON CONSTRAINT holds_idempotency_key DO NOTHING
        RETURNING h.hold_id
    )
    SELECT COALESCE(array_agg(r.hold_id), '{}') INTO v_dup
    FROM r WHERE r.hold_id NOT IN (SELECT ins.hold_id FROM ins);

    RETURN QUERY
    SELECT r.hold_id, 'duplicate'::text, h.hold_id, h.segment_id, h.item_id, h.buyer_id,
           h.qty, h.qty_sold, h.state, round(extract(epoch FROM h.expires_at) * 1000)::bigint,
           h.extended, h.request_hash
    FROM unnest(r_hold, r_tenant, r_key) AS r(hold_id, tenant_id, key)
    JOIN holds h ON h.tenant_id = r.tenant_id AND h.idempotency_key = r.key
    WHERE r.hold_id = ANY (v_dup);

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
        DELETE FROM holds h WHERE h.hold_id = ANY (v_lim);
        RETURN QUERY
        SELECT l, 'buyer_limit'::text, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
               NULL::integer, NULL::integer, NULL::text, NULL::bigint, NULL::boolean,
               NULL::bigint
        FROM unnest(v_lim) AS l;
    END IF;

    -- 3. transitions, only from 'held'
    IF cardinality(t_hold) > 0 THEN
        UPDATE holds h
        SET state = CASE WHEN t.kind = 'extended' THEN 'held' ELSE t.kind END,
            qty_sold = CASE WHEN t.kind = 'converted' THEN t.sold ELSE 0 END,
            ended_at = CASE WHEN t.kind = 'extended' THEN NULL ELSE clock_timestamp() END,
            expires_at = CASE WHEN t.expires > 0 THEN to_timestamp(t.expires / 1000.0)
                              ELSE h.expires_at END,
            extended = h.extended OR t.kind = 'extended'
        FROM unnest(t_hold, t_kind, t_sold, t_expires_ms) AS t(hold_id, kind, sold, expires)
        WHERE h.hold_id = t.hold_id AND h.state = 'held'
          AND NOT (t.kind = 'extended' AND h.extended);
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n <> cardinality(t_hold) THEN
            RAISE EXCEPTION 'escrow: hold state diverged (% of % transitions applied)',
                v_n, cardinality(t_hold) USING ERRCODE = 'ES002';
        END IF;

        -- units that went back to the shelf no longer count against the buyer
        UPDATE buyer_usage b SET used = b.used - x.ret
        FROM (SELECT h.tenant_id, h.item_id, h.buyer_id, sum(h.qty - h.qty_sold) AS ret
              FROM holds h JOIN unnest(t_hold, t_kind) AS t(hold_id, kind)
                   ON h.hold_id = t.hold_id
              WHERE t.kind <> 'extended'
              GROUP BY h.tenant_id, h.item_id, h.buyer_id) x
        WHERE b.tenant_id = x.tenant_id AND b.item_id = x.item_id AND b.buyer_id = x.buyer_id
          AND x.ret > 0;
    END IF;

    -- 4. outbox: one event per accepted reserve and per transition
    INSERT INTO outbox (tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty)
    SELECT h.tenant_id, h.item_id, h.segment_id, h.hold_id, h.buyer_id, 'held', h.qty
    FROM holds h WHERE h.hold_id = ANY (r_hold)
    UNION ALL
    SELECT h.tenant_id, h.item_id, h.segment_id, h.hold_id, h.buyer_id, t.kind,
           CASE t.kind WHEN 'converted' THEN h.qty_sold
                       WHEN 'extended' THEN h.qty
                       ELSE h.qty END
    FROM holds h JOIN unnest(t_hold, t_kind) AS t(hold_id, kind) ON h.hold_id = t.hold_id;

    -- 5. the hot rows, last: deltas under the epoch fence
    UPDATE segments s
    SET available = s.available + d.d_avail + COALESCE(x.q, 0),
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
    WHERE s.segment_id = d.segment_id AND s.epoch = d.epoch AND s.state <> 'retired';
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n <> cardinality(s_id) THEN
        RAISE EXCEPTION 'escrow: segment fenced (% of % segments at the expected epoch)',
            v_n, cardinality(s_id) USING ERRCODE = 'ES001';
    END IF;
END
$fn$;
