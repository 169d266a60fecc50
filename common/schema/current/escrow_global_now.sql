-- SPDX-License-Identifier: Apache-2.0
-- escrow_global_now - a global item's figures here (escrow_global_figures
-- without an outcome): the answer of escrow_global_restock and
-- escrow_global_reduce.
--
-- As of migration 0010_global_stock (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_global_now(p_tenant text, p_item text, p_self text)
RETURNS escrow_global_figures
LANGUAGE sql STABLE AS $$
    SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, g.global_total,
           COALESCE(c.changes, 0), COALESCE(c.delta, 0), i.total, i.unallocated, i.reduce_pending
      FROM global_items g JOIN items i USING (tenant_id, item_id)
      LEFT JOIN global_changes c ON c.tenant_id = g.tenant_id AND c.item_id = g.item_id
                                AND c.region = p_self
     WHERE g.tenant_id = p_tenant AND g.item_id = p_item
$$;
