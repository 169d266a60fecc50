-- SPDX-License-Identifier: Apache-2.0
-- 0003_coordinator.sql - what the coordinator needs: leases, collapse,
-- transfer reasons, operator actions.
--
-- Ownership: segments.node_id names the node that may write the segment,
-- segments.epoch the fence. Only the coordinator changes either, always
-- together (UPDATE ... SET node_id = $n, epoch = epoch + 1 WHERE epoch = $e),
-- so a paused or partitioned previous owner is refused by escrow_commit_batch.

-- A node process: a new incarnation (a restarted process) never inherits
-- the epochs of the previous one.
ALTER TABLE nodes
    ADD COLUMN incarnation bigint NOT NULL DEFAULT 0,
    ADD COLUMN lease_until timestamptz;

-- segments_wanted: how many active segments the item is split into.
-- tail_segment: non-NULL while the item is collapsed; every reserve goes
-- there and the other segments are 'draining' (they serve their own holds
-- and forward returned units to the tail).
ALTER TABLE items
    ADD COLUMN segments_wanted integer NOT NULL DEFAULT 1
        CONSTRAINT items_segments_wanted_range CHECK (segments_wanted BETWEEN 1 AND 256),
    ADD COLUMN tail_segment bigint,
    -- units an operator asked to remove that are still in segments; the
    -- coordinator takes them as they come back to unallocated
    ADD COLUMN reduce_pending bigint NOT NULL DEFAULT 0
        CONSTRAINT items_reduce_pending_nonneg CHECK (reduce_pending >= 0);
UPDATE items i SET segments_wanted = GREATEST(1, LEAST(256,
    (SELECT count(*) FROM segments s WHERE s.tenant_id = i.tenant_id AND s.item_id = i.item_id)));

-- Why stock moved. from_segment NULL: from items.unallocated (restock);
-- to_segment NULL: back to items.unallocated (reduce). planned_qty is what
-- the coordinator asked for; qty is what the donor actually sent.
ALTER TABLE transfers
    ADD COLUMN reason text NOT NULL DEFAULT 'rebalance'
        CONSTRAINT transfers_reason_valid
        CHECK (reason IN ('rebalance', 'refill', 'collapse', 'forward', 'restock', 'reduce',
                          'split', 'drain')),
    ADD COLUMN planned_qty bigint,
    ADD CONSTRAINT transfers_has_an_end CHECK (from_segment IS NOT NULL OR to_segment IS NOT NULL);
CREATE INDEX transfers_open ON transfers (transfer_id) WHERE state IN ('planned', 'sent');

-- Who caused a transition: NULL for buyers and the sweeper, 'operator' for
-- escrowctl release, 'coordinator' for catalog events.
ALTER TABLE outbox ADD COLUMN actor text;
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_valid,
    ADD CONSTRAINT outbox_kind_valid
    CHECK (kind IN ('held', 'converted', 'cancelled', 'expired', 'extended',
                    'transfer_sent', 'transfer_received', 'transfer_cancelled',
                    'restocked', 'reduced', 'paused', 'resumed', 'retired',
                    'collapsed', 'split'));
