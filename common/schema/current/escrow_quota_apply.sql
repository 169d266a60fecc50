-- SPDX-License-Identifier: Apache-2.0
-- escrow_quota_apply - step 2 of a quota transfer, at the receiver, at most
-- once per (p_from, p_transfer). Returns 'applied' (now), 'applied-before',
-- 'refused' (now: no such active global item here) or 'refused-before'.
-- ES010: offered by this region to itself; ES011: the same key with another
-- item or qty (nothing is changed). Applied units go through
-- escrow_unallocated_add (a pending reduce takes them first).
--
-- As of migration 0010_global_stock (0008_regions before).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

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
