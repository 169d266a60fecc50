-- SPDX-License-Identifier: Apache-2.0
-- escrow_quota_send - step 1 of a quota transfer between regions, at the
-- donor: takes q units of the item's unallocated quota and records them sent
-- to p_to. Returns the transfer id, or NULL when the item is not global here,
-- is retired, or has fewer than q units unallocated. ES010: sending to
-- itself.
--
-- As of migration 0008_regions (unchanged since; 0008 explains the three
-- steps and the global invariant).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_quota_send(p_tenant text, p_item text, p_to text, p_qty bigint,
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
