-- SPDX-License-Identifier: Apache-2.0
-- escrow_global_reduce - a reduce of a global item, carried out by this
-- region once per operation id: p_qty units off the global total, taken by
-- items.reduce_pending here (unallocated now, the rest as units come back
-- from the segments or arrive as quota from the other regions; held units
-- only once they come back). Refused (outcome 'refused', free) when fewer
-- than p_qty units are neither sold nor being reduced: here from the
-- database, elsewhere p_elsewhere; it could never complete. p_elsewhere
-- NULL: a known id is answered, a new one is not judged (outcome
-- 'unjudged'). ES010, ES011 as escrow_global_restock.
--
-- As of migration 0010_global_stock (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_global_reduce(p_tenant text, p_item text, p_op text, p_qty bigint,
                                     p_elsewhere bigint) RETURNS escrow_global_figures
LANGUAGE plpgsql AS $$
DECLARE
    v_self text := (SELECT region FROM region_self);
    v_op global_ops%ROWTYPE;
    v_free bigint;
    v_red bigint;
    r escrow_global_figures;
BEGIN
    IF v_self IS NULL THEN
        RAISE EXCEPTION 'this database belongs to no region yet' USING ERRCODE = 'ES010';
    END IF;
    SELECT * INTO v_op FROM global_ops o WHERE o.tenant_id = p_tenant AND o.op_id = p_op;
    IF FOUND THEN
        IF v_op.item_id <> p_item OR v_op.kind <> 'reduce' OR v_op.qty <> p_qty THEN
            RAISE EXCEPTION 'operation % was used before for % of % units of %/%', p_op,
                v_op.kind, v_op.qty, p_tenant, v_op.item_id USING ERRCODE = 'ES011';
        END IF;
        r := escrow_global_now(p_tenant, p_item, v_self);
        r.outcome := 'before';
        RETURN r;
    END IF;
    IF p_elsewhere IS NULL THEN
        r := escrow_global_now(p_tenant, p_item, v_self);
        r.outcome := 'unjudged';
        RETURN r;
    END IF;
    SELECT g.global_total - i.reduce_pending - p_elsewhere
           - COALESCE((SELECT sum(s.sold) FROM segments s
                        WHERE s.tenant_id = p_tenant AND s.item_id = p_item), 0)
      INTO v_free
      FROM global_items g JOIN items i USING (tenant_id, item_id)
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item AND i.state <> 'retired';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no active global item %/% in region %', p_tenant, p_item, v_self
            USING ERRCODE = 'ES010';
    END IF;
    IF v_free < p_qty THEN
        r := escrow_global_now(p_tenant, p_item, v_self);
        r.outcome := 'refused';
        r.free := GREATEST(v_free, 0);
        RETURN r;
    END IF;
    INSERT INTO global_ops (tenant_id, op_id, item_id, kind, qty)
    VALUES (p_tenant, p_op, p_item, 'reduce', p_qty);
    UPDATE global_items g SET global_total = g.global_total - p_qty
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item;
    INSERT INTO global_changes AS c (tenant_id, item_id, region, changes, delta)
    VALUES (p_tenant, p_item, v_self, 1, -p_qty)
    ON CONFLICT (tenant_id, item_id, region)
    DO UPDATE SET changes = c.changes + 1, delta = c.delta - p_qty;
    SELECT LEAST(i.reduce_pending + p_qty, i.unallocated) INTO v_red
      FROM items i WHERE i.tenant_id = p_tenant AND i.item_id = p_item;
    UPDATE items i SET total = i.total - v_red, unallocated = i.unallocated - v_red,
           reduce_pending = i.reduce_pending + p_qty - v_red
     WHERE i.tenant_id = p_tenant AND i.item_id = p_item;
    INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
    VALUES (p_tenant, p_item, 'reduced', p_qty, 'coordinator');
    r := escrow_global_now(p_tenant, p_item, v_self);
    r.outcome := 'done';
    r.free := v_free - p_qty;
    RETURN r;
END $$;
