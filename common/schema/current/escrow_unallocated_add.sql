-- SPDX-License-Identifier: Apache-2.0
-- escrow_unallocated_add - p_qty units of quota arrive in an item's
-- unallocated (a quota transfer applied, refused units back at the donor, a
-- global restock placed here); a pending reduce takes what it still needs.
-- Returns the units it took.
--
-- As of migration 0010_global_stock (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_unallocated_add(p_tenant text, p_item text, p_qty bigint) RETURNS bigint
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
