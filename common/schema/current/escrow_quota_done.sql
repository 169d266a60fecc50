-- SPDX-License-Identifier: Apache-2.0
-- escrow_quota_done - step 3 of a quota transfer, at the donor: the
-- receiver's answer. 'refused' gives the units back to the donor's
-- unallocated quota (escrow_unallocated_add: a pending reduce takes them
-- first). Returns false when the row was no longer 'sent' (answered before:
-- nothing changes). ES010: an outcome other than 'received' or 'refused'.
--
-- As of migration 0010_global_stock (0008_regions before).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_quota_done(p_transfer bigint, p_outcome text) RETURNS boolean
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
        PERFORM escrow_unallocated_add(t.tenant_id, t.item_id, t.qty);
        INSERT INTO outbox (tenant_id, item_id, kind, qty, actor)
        VALUES (t.tenant_id, t.item_id, 'quota_returned', t.qty, 'coordinator');
    END IF;
    RETURN true;
END $$;
