-- SPDX-License-Identifier: Apache-2.0
-- 0010_global_stock.sql - restock and reduce of a global item, exactly once
-- across regions.
--
-- An operation (restock or reduce) is carried out by one region, the one the
-- operator's request reached, in one transaction of that region's database:
--   - its id is recorded (global_ops), so a retried or duplicated request is
--     answered with the first outcome and changes nothing;
--   - the region's own global_total changes, and so does its row of
--     global_changes (how many operations it carried out and their sum);
--   - restock: the units join this region's quota, or leave at once as a
--     quota transfer ('sent', reason 'restock') to the region they are placed
--     in: from then on they follow the three steps of 0008;
--   - reduce: items.reduce_pending grows by the qty and takes what is
--     unallocated now; the rest is taken as units come back to unallocated:
--     from this region's segments (transfers, reason 'reduce'), or as quota
--     the other regions send for it (quota transfers, reason 'reduce').
-- The other regions learn the change from this region's status (its row of
-- global_changes), at most once: escrow_global_learn applies a region's row
-- only when it reports more operations than known here.
--
-- So, per global item and per region r, at every instant:
--   global_total(r) - sum of r's global_changes.delta = the total at creation
-- (the same in every region), and the global invariant of 0008 becomes
--   sum over regions of (items.total - items.reduce_pending) + units in flight
--     = the total at creation + sum over regions of their own delta
-- (each region's own row read from that region's database: escrowctl check
-- --global).

-- Operations carried out by this region: one row per operation id.
CREATE TABLE global_ops (
    tenant_id   text NOT NULL,
    op_id       text NOT NULL CONSTRAINT global_ops_id_format CHECK (op_id ~ '^[!-~]{1,128}$'),
    item_id     text NOT NULL,
    kind        text NOT NULL CONSTRAINT global_ops_kind_valid CHECK (kind IN ('restock', 'reduce')),
    qty         bigint NOT NULL CONSTRAINT global_ops_qty_positive CHECK (qty > 0),
    placed_in   text,   -- restock: the region that got the units
    transfer_id bigint, -- restock placed in another region: its quota transfer
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT global_ops_once PRIMARY KEY (tenant_id, op_id),
    CONSTRAINT global_ops_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES global_items
);

-- What each region changed in a global item's total, as known here.
CREATE TABLE global_changes (
    tenant_id text NOT NULL,
    item_id   text NOT NULL,
    region    text NOT NULL CONSTRAINT global_changes_region_format CHECK (region ~ '^[!-~]{1,64}$'),
    changes   bigint NOT NULL CONSTRAINT global_changes_count_nonneg CHECK (changes >= 0),
    delta     bigint NOT NULL,
    PRIMARY KEY (tenant_id, item_id, region),
    CONSTRAINT global_changes_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES global_items
);

ALTER TABLE quota_transfers DROP CONSTRAINT quota_transfers_reason_valid,
    ADD CONSTRAINT quota_transfers_reason_valid
    CHECK (reason IN ('manual', 'auto', 'restock', 'reduce'));

-- The item's figures after an operation (the coordinator's memory follows).
CREATE TYPE escrow_global_figures AS (
    outcome        text,   -- 'done', 'before' (the id was used: its first outcome),
                           -- 'refused', 'unjudged' (a reduce that cannot be judged yet)
    free           bigint, -- reduce: units that could be taken (when refused)
    placed_in      text,   -- restock
    transfer_id    bigint, -- restock placed in another region
    global_total   bigint,
    changes        bigint, -- this region's row of global_changes
    delta          bigint,
    total          bigint, -- items
    unallocated    bigint,
    reduce_pending bigint
);

-- Restock: p_qty units added to the global total, placed in p_place (this
-- region, or another region as a quota transfer). ES010: this database has
-- no region yet, or the item is not an active global item here; ES011: the
-- operation id was used before for another change; ES012: the global total
-- would pass 1,000,000,000.
CREATE FUNCTION escrow_global_restock(p_tenant text, p_item text, p_op text, p_qty bigint,
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

-- Reduce: p_qty units taken off the global total, never more than are
-- neither sold nor already being reduced anywhere (sold units never come
-- back; held ones may): here from this database, elsewhere p_elsewhere (the
-- other regions' sold + pending reduces, from their last status). Refused
-- (nothing recorded, outcome 'refused' with free) when that is less than
-- p_qty: it could never complete. Units are only ever taken when they are
-- neither held nor sold, so a total never drops below what is. p_elsewhere
-- NULL (a region has not reported yet): a known operation id is answered,
-- a new one is not judged (outcome 'unjudged', nothing recorded). ES010,
-- ES011 as restock.
CREATE FUNCTION escrow_global_reduce(p_tenant text, p_item text, p_op text, p_qty bigint,
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

-- The figures of a global item now (outcome NULL).
CREATE FUNCTION escrow_global_now(p_tenant text, p_item text, p_self text)
RETURNS escrow_global_figures
LANGUAGE sql STABLE AS $$
    SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, g.global_total,
           COALESCE(c.changes, 0), COALESCE(c.delta, 0), i.total, i.unallocated, i.reduce_pending
      FROM global_items g JOIN items i USING (tenant_id, item_id)
      LEFT JOIN global_changes c ON c.tenant_id = g.tenant_id AND c.item_id = g.item_id
                                AND c.region = p_self
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item
$$;

-- Another region's row of global_changes, from its status: applied when it
-- reports more operations than known here (a late or repeated status changes
-- nothing), global_total moving by the difference. Returns the operations
-- known from p_region and the global total afterwards; NULL when the item is
-- not global here. A row that would take global_total below zero waits (a
-- change it follows from a third region is not known here yet). ES010: a
-- region's own row.
CREATE FUNCTION escrow_global_learn(p_tenant text, p_item text, p_region text, p_changes bigint,
                                    p_delta bigint, OUT changes bigint, OUT global_total bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_changes bigint := 0;
    v_delta bigint := 0;
BEGIN
    IF p_region = (SELECT region FROM region_self) THEN
        RAISE EXCEPTION 'a region learns its own changes from nobody' USING ERRCODE = 'ES010';
    END IF;
    SELECT g.global_total INTO global_total FROM global_items g
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT c.changes, c.delta INTO v_changes, v_delta FROM global_changes c
     WHERE c.tenant_id = p_tenant AND c.item_id = p_item AND c.region = p_region;
    v_changes := COALESCE(v_changes, 0);
    v_delta := COALESCE(v_delta, 0);
    changes := v_changes;
    IF p_changes <= v_changes OR global_total + p_delta - v_delta < 0 THEN
        RETURN;
    END IF;
    INSERT INTO global_changes AS c (tenant_id, item_id, region, changes, delta)
    VALUES (p_tenant, p_item, p_region, p_changes, p_delta)
    ON CONFLICT (tenant_id, item_id, region)
    DO UPDATE SET changes = p_changes, delta = p_delta;
    UPDATE global_items g SET global_total = g.global_total + p_delta - v_delta
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item
    RETURNING g.global_total INTO global_total;
    changes := p_changes;
END $$;

-- Step 2 of 0008, unchanged but for one thing: quota that arrives while a
-- reduce is pending here is taken by the reduce first.
CREATE OR REPLACE FUNCTION escrow_quota_apply(p_from text, p_transfer bigint, p_tenant text, p_item text,
                                   p_qty bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r quota_receipts%ROWTYPE;
    v_ok boolean;
BEGIN
    IF p_from = (SELECT region FROM region_self) THEN
        RAISE EXCEPTION 'quota offered by this region to itself' USING ERRCODE = 'ES010';
    END IF;
    SELECT * INTO r FROM quota_receipts WHERE from_region = p_from AND transfer_id = p_transfer;
    IF NOT FOUND THEN
        v_ok := EXISTS (SELECT 1 FROM global_items g JOIN items i USING (tenant_id, item_id)
                         WHERE g.tenant_id = p_tenant AND g.item_id = p_item
                           AND i.state <> 'retired');
        INSERT INTO quota_receipts (from_region, transfer_id, tenant_id, item_id, qty, outcome, why)
        VALUES (p_from, p_transfer, p_tenant, p_item, p_qty,
                CASE WHEN v_ok THEN 'applied' ELSE 'refused' END,
                CASE WHEN v_ok THEN NULL ELSE 'no such active global item in this region' END)
        ON CONFLICT ON CONSTRAINT quota_receipts_once DO NOTHING;
        IF NOT FOUND THEN
            -- another session applied it between our look and our insert
            SELECT * INTO r FROM quota_receipts WHERE from_region = p_from AND transfer_id = p_transfer;
        ELSIF v_ok THEN
            PERFORM escrow_unallocated_add(p_tenant, p_item, p_qty);
            INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
            VALUES (p_tenant, p_item, 'quota_received', p_qty, 'coordinator');
            RETURN 'applied';
        ELSE
            RETURN 'refused';
        END IF;
    END IF;
    IF r.tenant_id <> p_tenant OR r.item_id <> p_item OR r.qty <> p_qty THEN
        RAISE EXCEPTION 'quota transfer %/% was offered before with other figures', p_from, p_transfer
            USING ERRCODE = 'ES011';
    END IF;
    RETURN r.outcome || '-before';
END $$;

-- Step 3 of 0008, unchanged but for the same thing: refused units that come
-- back are taken by a pending reduce first.
CREATE OR REPLACE FUNCTION escrow_quota_done(p_transfer bigint, p_outcome text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    t quota_transfers%ROWTYPE;
BEGIN
    IF p_outcome NOT IN ('received', 'refused') THEN
        RAISE EXCEPTION 'bad outcome %', p_outcome USING ERRCODE = 'ES010';
    END IF;
    UPDATE quota_transfers SET state = p_outcome, ended_at = now()
     WHERE transfer_id = p_transfer AND state = 'sent' RETURNING * INTO t;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_outcome = 'refused' THEN
        PERFORM escrow_unallocated_add(t.tenant_id, t.item_id, t.qty);
        INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
        VALUES (t.tenant_id, t.item_id, 'quota_returned', t.qty, 'coordinator');
    END IF;
    RETURN true;
END $$;

-- p_qty units of quota arrive in the item's unallocated (a transfer applied,
-- or refused units back at the donor); a pending reduce takes what it still
-- needs of them. Returns the units it took.
CREATE FUNCTION escrow_unallocated_add(p_tenant text, p_item text, p_qty bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_red bigint;
BEGIN
    SELECT LEAST(i.reduce_pending, i.unallocated + p_qty) INTO v_red
      FROM items i WHERE i.tenant_id = p_tenant AND i.item_id = p_item FOR UPDATE;
    UPDATE items i SET total = i.total + p_qty - v_red,
           unallocated = i.unallocated + p_qty - v_red, reduce_pending = i.reduce_pending - v_red
     WHERE i.tenant_id = p_tenant AND i.item_id = p_item;
    RETURN v_red;
END $$;
