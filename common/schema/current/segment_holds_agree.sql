-- SPDX-License-Identifier: Apache-2.0
-- segment_holds_agree - per segment, whether its held and sold counters
-- equal the holds behind them (live holds' qty, converted holds' qty_sold,
-- plus the units sold by holds whose partition retention dropped).
-- Read by escrowctl check and the coordinator's invariant monitor.
--
-- As of migration 0012_retention (holds_retired); first 0001_init.
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE VIEW segment_holds_agree AS
SELECT s.segment_id, s.tenant_id, s.item_id, s.held, s.sold,
       COALESCE(h.live, 0) AS holds_live, COALESCE(h.sold, 0) + COALESCE(r.sold, 0) AS holds_sold,
       s.held = COALESCE(h.live, 0) AND s.sold = COALESCE(h.sold, 0) + COALESCE(r.sold, 0) AS ok
FROM segments s
LEFT JOIN (SELECT segment_id,
                  sum(qty) FILTER (WHERE state = 'held') AS live,
                  sum(qty_sold) FILTER (WHERE state = 'converted') AS sold
           FROM holds GROUP BY segment_id) h USING (segment_id)
LEFT JOIN holds_retired r USING (segment_id);
