-- SPDX-License-Identifier: Apache-2.0
-- segment_holds_agree_recent - segment_holds_agree that reads only the
-- holds of the days not closed yet (today, yesterday until an hour after
-- midnight UTC, a day that still has
-- a live hold, and holds_default), plus holds_closed for the closed days
-- and holds_retired for the dropped ones: the same answer, at a cost that
-- does not grow with history (the closed partitions are pruned at run
-- time). Read by the coordinator's invariant monitor; escrowctl check reads
-- segment_holds_agree (every hold).
--
-- As of migration 0016_holds_closed.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE VIEW segment_holds_agree_recent AS
SELECT s.segment_id, s.tenant_id, s.item_id, s.held, s.sold,
       COALESCE(h.live, 0) AS holds_live,
       COALESCE(h.sold, 0) + COALESCE(c.sold, 0) + COALESCE(r.sold, 0) AS holds_sold,
       s.held = COALESCE(h.live, 0)
       AND s.sold = COALESCE(h.sold, 0) + COALESCE(c.sold, 0) + COALESCE(r.sold, 0) AS ok
FROM segments s
LEFT JOIN (SELECT segment_id,
                  sum(qty) FILTER (WHERE state = 'held') AS live,
                  sum(qty_sold) FILTER (WHERE state = 'converted') AS sold
           FROM holds
           WHERE created_day >= COALESCE((SELECT m.through + 1 FROM holds_closed_mark m), '-infinity')
           GROUP BY segment_id) h USING (segment_id)
LEFT JOIN holds_closed c USING (segment_id)
LEFT JOIN holds_retired r USING (segment_id);
