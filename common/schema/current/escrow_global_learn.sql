-- SPDX-License-Identifier: Apache-2.0
-- escrow_global_learn - another region's row of global_changes, from its
-- status: applied when it reports more operations than known here,
-- global_total moving by the difference; waits (nothing changes) while it
-- would take global_total below zero. Returns the operations known from
-- p_region and the global total; NULL when the item is not global here.
-- ES010: a region's own row.
--
-- As of migration 0010_global_stock (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_global_learn(p_tenant text, p_item text, p_region text, p_changes bigint,
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
