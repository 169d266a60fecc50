-- SPDX-License-Identifier: Apache-2.0
-- 0008_regions.sql - regions: one database per region, global items split
-- into regional quotas, quota moved between regions exactly once.
--
-- A region's quota of a global item IS its items.total: the region's own
-- conservation (available + held + sold + in flight + unallocated = total)
-- is unchanged, and its coordinator places and rebalances that quota like
-- any item's stock. Quota moves between two databases with no shared
-- transaction:
--   1. donor:    items.total -= q (from unallocated only) and a
--                quota_transfers row 'sent', in one transaction
--                (escrow_quota_send);
--   2. receiver: a quota_receipts row keyed by (from_region, transfer_id)
--                and items.total += q, in one transaction, at most once per
--                key (escrow_quota_apply); a refusal (no such global item)
--                is recorded the same way, so a late retry can never apply
--                what the donor was told was refused;
--   3. donor:    the row becomes 'received' (or 'refused': the units come
--                back to the donor's unallocated) (escrow_quota_done).
-- The donor resends step 2 until it hears an answer, after any crash or
-- partition. Units between 1 and 3 are "in flight": the donor's 'sent' and
-- 'received' rows that the receiver has no 'applied' receipt for.
--
-- The global invariant, read from every region's database (escrowctl check
-- --global; no shared database):
--   sum over regions of items.total + units in flight = global_items.global_total

-- Which region this database belongs to: written once by the region's first
-- coordinator; a coordinator configured for another region refuses to start.
CREATE TABLE region_self (
    one_row    boolean PRIMARY KEY DEFAULT true CONSTRAINT region_self_one_row CHECK (one_row),
    region     text NOT NULL CONSTRAINT region_self_name_format CHECK (region ~ '^[!-~]{1,64}$'),
    claimed_at timestamptz NOT NULL DEFAULT now()
);

-- An item sold in several regions. global_total is the same in every
-- region's row; regions names the regions it was split over at creation.
-- A global item's total changes only by quota moves (restock and reduce of
-- a global item are refused by the coordinator).
CREATE TABLE global_items (
    tenant_id     text NOT NULL,
    item_id       text NOT NULL,
    global_total  bigint NOT NULL CONSTRAINT global_items_total_nonneg CHECK (global_total >= 0),
    regions       text[] NOT NULL,
    initial_quota bigint NOT NULL CONSTRAINT global_items_initial_nonneg CHECK (initial_quota >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, item_id),
    CONSTRAINT global_items_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES items
);

-- Donor side: quota this region sent.
CREATE TABLE quota_transfers (
    transfer_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text NOT NULL,
    item_id     text NOT NULL,
    to_region   text NOT NULL CONSTRAINT quota_transfers_region_format CHECK (to_region ~ '^[!-~]{1,64}$'),
    qty         bigint NOT NULL CONSTRAINT quota_transfers_qty_positive CHECK (qty > 0),
    state       text NOT NULL DEFAULT 'sent'
                CONSTRAINT quota_transfers_state_valid CHECK (state IN ('sent', 'received', 'refused')),
    reason      text NOT NULL
                CONSTRAINT quota_transfers_reason_valid CHECK (reason IN ('manual', 'auto')),
    sent_at     timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    CONSTRAINT quota_transfers_ended_iff_final CHECK ((state = 'sent') = (ended_at IS NULL)),
    CONSTRAINT quota_transfers_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES global_items
);
CREATE INDEX quota_transfers_open ON quota_transfers (transfer_id) WHERE state = 'sent';

-- Receiver side: one row per transfer ever offered here, applied or refused.
CREATE TABLE quota_receipts (
    from_region text NOT NULL,
    transfer_id bigint NOT NULL,
    tenant_id   text NOT NULL,
    item_id     text NOT NULL,
    qty         bigint NOT NULL CONSTRAINT quota_receipts_qty_positive CHECK (qty > 0),
    outcome     text NOT NULL CONSTRAINT quota_receipts_outcome_valid CHECK (outcome IN ('applied', 'refused')),
    why         text,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT quota_receipts_once PRIMARY KEY (from_region, transfer_id)
);

ALTER TABLE outbox DROP CONSTRAINT outbox_kind_valid,
    ADD CONSTRAINT outbox_kind_valid
    CHECK (kind IN ('held', 'converted', 'cancelled', 'expired', 'extended',
                    'transfer_sent', 'transfer_received', 'transfer_cancelled',
                    'restocked', 'reduced', 'paused', 'resumed', 'retired',
                    'collapsed', 'split', 'quota_sent', 'quota_received', 'quota_refused',
                    'quota_returned'));

-- Step 1. Takes q units of the item's unallocated quota and records them
-- sent to p_to. Returns the transfer id, or NULL when the item is not
-- global here, is retired, or has fewer than q units unallocated (the
-- coordinator reclaims units from the segments first).
CREATE FUNCTION escrow_quota_send(p_tenant text, p_item text, p_to text, p_qty bigint,
                                  p_reason text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_to = (SELECT region FROM region_self) THEN
        RAISE EXCEPTION 'a region cannot send quota to itself' USING ERRCODE = 'ES010';
    END IF;
    UPDATE items i SET total = i.total - p_qty, unallocated = i.unallocated - p_qty
     WHERE i.tenant_id = p_tenant AND i.item_id = p_item AND i.state <> 'retired'
       AND i.unallocated - i.reduce_pending >= p_qty
       AND EXISTS (SELECT 1 FROM global_items g
                    WHERE g.tenant_id = p_tenant AND g.item_id = p_item);
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO quota_transfers (tenant_id, item_id, to_region, qty, reason)
    VALUES (p_tenant, p_item, p_to, p_qty, p_reason) RETURNING transfer_id INTO v_id;
    INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
    VALUES (p_tenant, p_item, 'quota_sent', p_qty, 'coordinator');
    RETURN v_id;
END $$;

-- Step 2, at the receiver. Returns 'applied' (now), 'applied-before',
-- 'refused' (now: no such global item here, or it is retired) or
-- 'refused-before'. The same key with another item or qty is an error
-- (ES011): something is badly misconfigured, nothing is changed.
CREATE FUNCTION escrow_quota_apply(p_from text, p_transfer bigint, p_tenant text, p_item text,
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
            UPDATE items SET total = total + p_qty, unallocated = unallocated + p_qty
             WHERE tenant_id = p_tenant AND item_id = p_item;
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

-- Step 3, at the donor: the receiver's answer. 'refused' gives the units
-- back to the donor's unallocated quota. Returns false when the row was no
-- longer 'sent' (answered before: nothing changes).
CREATE FUNCTION escrow_quota_done(p_transfer bigint, p_outcome text) RETURNS boolean
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
        UPDATE items SET total = total + t.qty, unallocated = unallocated + t.qty
         WHERE tenant_id = t.tenant_id AND item_id = t.item_id;
        INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
        VALUES (t.tenant_id, t.item_id, 'quota_returned', t.qty, 'coordinator');
    END IF;
    RETURN true;
END $$;
