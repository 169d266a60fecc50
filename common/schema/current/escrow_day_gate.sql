-- SPDX-License-Identifier: Apache-2.0
-- escrow_day_gate - makes two batches that insert holds on either side of
-- midnight UTC see each other's idempotency keys. The unique index on
-- (tenant_id, idempotency_key, created_day) serializes two batches of the
-- same day; batches of neighbouring days write different partitions. Each
-- batch with new holds holds its day shared until it ends, then waits for
-- every batch that holds the day before or the day after (an exclusive lock
-- taken and let go at once). Of two racing batches of neighbouring days, the
-- one that passes its gate second waits for the other to commit and then
-- finds its key; if both wait, PostgreSQL's deadlock detector aborts one and
-- the node retries it. Outside the minutes around midnight nobody holds a
-- neighbouring day and the gate costs three lock-table calls.
--
-- As of migration 0012_retention.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE FUNCTION escrow_day_gate(p_day date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_d integer := p_day - date '2000-01-01';
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1163085895, v_d);
    PERFORM pg_advisory_lock(1163085895, v_d - 1), pg_advisory_unlock(1163085895, v_d - 1);
    PERFORM pg_advisory_lock(1163085895, v_d + 1), pg_advisory_unlock(1163085895, v_d + 1);
END
$$;
