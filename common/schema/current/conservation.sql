-- SPDX-License-Identifier: Apache-2.0
-- conservation - the view of conservation, per item: every unit is in a
-- segment (available, held or sold), in a transfer that was sent and not yet
-- received, or unallocated; ok when they add up to the total and held + sold
-- never exceeds it. Read by escrowctl check and status, and by the
-- coordinator's invariant monitor (coord_mon.h).
--
-- As of migration 0001_init (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE VIEW conservation AS
SELECT i.tenant_id, i.item_id, i.total, i.unallocated,
       COALESCE(s.available, 0) AS available,
       COALESCE(s.held, 0)      AS held,
       COALESCE(s.sold, 0)      AS sold,
       COALESCE(t.in_flight, 0) AS in_flight,
       COALESCE(s.available, 0) + COALESCE(s.held, 0) + COALESCE(s.sold, 0)
           + COALESCE(t.in_flight, 0) + i.unallocated = i.total
       AND COALESCE(s.held, 0) + COALESCE(s.sold, 0) <= i.total AS ok
FROM items i
LEFT JOIN (SELECT tenant_id, item_id, sum(available) AS available, sum(held) AS held,
                  sum(sold) AS sold
           FROM segments GROUP BY tenant_id, item_id) s USING (tenant_id, item_id)
LEFT JOIN (SELECT tenant_id, item_id, sum(qty) AS in_flight
           FROM transfers WHERE state = 'sent' GROUP BY tenant_id, item_id) t
       USING (tenant_id, item_id);
