-- SPDX-License-Identifier: Apache-2.0
-- escrow_global_restock - a restock of a global item, carried out by this
-- region once per operation id: p_qty units added to the global total and
-- placed in p_place (this region's quota, or a quota transfer 'sent' with
-- reason 'restock' to another region). Returns escrow_global_figures
-- (outcome 'done', or 'before' with the first outcome). ES010: no region yet,
-- or no active global item here; ES011: the id was used for another change;
-- ES012: the global total would pass 1,000,000,000.
--
-- As of migration 0020_segment_lock_order (0010_global_stock explains the
-- operations and the global invariant with them; 0020 locks the segments
-- rows lowest id first).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_global_restock(p_tenant text, p_item text, p_op text, p_qty bigint,
                                      p_place text) RETURNS escrow_global_figures
LANGUAGE plpgsql AS $$
DECLARE
    v_self text := (SELECT region FROM region_self);
    v_op global_ops%ROWTYPE;
    v_xfer bigint;
    v_tail bigint;
    r escrow_global_figures;
BEGIN
    IF v_self IS NULL THEN
        RAISE EXCEPTION 'this database belongs to no region yet' USING ERRCODE = 'ES010';
    END IF;
    SELECT * INTO v_op FROM global_ops o WHERE o.tenant_id = p_tenant AND o.op_id = p_op;
    IF FOUND THEN
        IF v_op.item_id <> p_item OR v_op.kind <> 'restock' OR v_op.qty <> p_qty THEN
            RAISE EXCEPTION 'operation % was used before for % of % units of %/%', p_op,
                v_op.kind, v_op.qty, p_tenant, v_op.item_id USING ERRCODE = 'ES011';
        END IF;
        r := escrow_global_now(p_tenant, p_item, v_self);
        r.outcome := 'before';
        r.placed_in := v_op.placed_in;
        r.transfer_id := v_op.transfer_id;
        RETURN r;
    END IF;
    UPDATE global_items g SET global_total = g.global_total + p_qty
      FROM items i
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item
       AND i.tenant_id = p_tenant AND i.item_id = p_item AND i.state <> 'retired';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no active global item %/% in region %', p_tenant, p_item, v_self
            USING ERRCODE = 'ES010';
    END IF;
    INSERT INTO global_ops (tenant_id, op_id, item_id, kind, qty, placed_in)
    VALUES (p_tenant, p_op, p_item, 'restock', p_qty, p_place);
    IF (SELECT g.global_total FROM global_items g
         WHERE g.tenant_id = p_tenant AND g.item_id = p_item) > 1000000000 THEN
        RAISE EXCEPTION 'the global total of %/% would pass 1000000000', p_tenant, p_item
            USING ERRCODE = 'ES012';
    END IF;
    INSERT INTO global_changes AS c (tenant_id, item_id, region, changes, delta)
    VALUES (p_tenant, p_item, v_self, 1, p_qty)
    ON CONFLICT (tenant_id, item_id, region)
    DO UPDATE SET changes = c.changes + 1, delta = c.delta + p_qty;
    INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
    VALUES (p_tenant, p_item, 'restocked', p_qty, 'coordinator');
    IF p_place = v_self THEN
        SELECT i.tail_segment INTO v_tail FROM items i
         WHERE i.tenant_id = p_tenant AND i.item_id = p_item;
        PERFORM escrow_unallocated_add(p_tenant, p_item, p_qty);
        UPDATE items i SET tail_segment = NULL WHERE i.tenant_id = p_tenant AND i.item_id = p_item;
        IF v_tail IS NOT NULL THEN
            -- more stock: a collapsed item sells from its segments again
            -- (their rows locked lowest segment_id first: 0020)
            PERFORM 1 FROM segments s
             WHERE s.tenant_id = p_tenant AND s.item_id = p_item AND s.state <> 'retired'
             ORDER BY s.segment_id FOR NO KEY UPDATE;
            UPDATE segments s SET state = CASE WHEN x.n <= i.segments_wanted THEN 'active'
                                               ELSE 'draining' END
              FROM (SELECT segment_id, row_number() OVER (ORDER BY seg_no) AS n FROM segments
                     WHERE tenant_id = p_tenant AND item_id = p_item AND state <> 'retired') x,
                   items i
             WHERE s.segment_id = x.segment_id AND i.tenant_id = p_tenant AND i.item_id = p_item;
        END IF;
    ELSE
        -- the units leave at once: step 1 of a quota transfer (0008)
        INSERT INTO quota_transfers (tenant_id, item_id, to_region, qty, reason)
        VALUES (p_tenant, p_item, p_place, p_qty, 'restock') RETURNING transfer_id INTO v_xfer;
        INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
        VALUES (p_tenant, p_item, 'quota_sent', p_qty, 'coordinator');
        UPDATE global_ops o SET transfer_id = v_xfer WHERE o.tenant_id = p_tenant AND o.op_id = p_op;
    END IF;
    r := escrow_global_now(p_tenant, p_item, v_self);
    r.outcome := 'done';
    r.placed_in := p_place;
    r.transfer_id := v_xfer;
    RETURN r;
END $$;
