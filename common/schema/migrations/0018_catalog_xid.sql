-- SPDX-License-Identifier: Apache-2.0
-- 0018_catalog_xid.sql - the coordinator reads only the catalog rows that
-- changed, instead of the whole catalog whenever anything changed.
--
-- Until now every statement that wrote items, segments, transfers,
-- global_items or nodes took a number from catalog_change_seq (0013), and
-- the coordinator re-read the whole catalog when the number moved. A
-- node's sale batch updates segment counters, so a sale on one item made
-- the coordinator re-read every segment of every item at each poll.
--
-- Now each of these tables has cat_xid: the id of the transaction that
-- last changed a column the coordinator's in-memory catalog keeps, set by
-- a BEFORE row trigger (pg_current_xact_id(): the top-level transaction's
-- id, 64 bits, never wraps), and a btree index on it. The triggers fire
-- only when such a column changes:
--   items         total, unallocated, reduce_pending, state, segments_wanted,
--                 tail_segment (and the keys)
--   segments      node_id, epoch, state, region (and the keys)
--   transfers     from_segment, to_segment, from_region, to_region, qty,
--                 state (and the keys)
--   global_items  global_total (and the keys)
--   nodes         endpoint, incarnation, state (not last_seen_at, which the
--                 coordinator rewrites every second)
-- A node's batch writes available, held, sold, hold_seq and last_batch of
-- segments: none of them fires the trigger and none is indexed, so the
-- update stays HOT and the coordinator does not read the row again. The
-- coordinator learns those counters from the nodes' heartbeats; its
-- copies from the database (used for a segment no owner reports) are
-- read again when the segment's owner or epoch changes and at the
-- periodic full read.
--
-- The coordinator's read: the snapshot's xmin
-- (pg_snapshot_xmin(pg_current_snapshot())) in its first statement, then
-- the rows with cat_xid >= the xmin of the previous read. A transaction
-- that was not visible to a snapshot has a top-level id >= that
-- snapshot's xmin, so a transaction that took its id before a read and
-- committed after it is still read the next time (coord_change.h).
--
-- No rows of these tables are deleted by the service (items and nodes are
-- retired, transfers closed, segments retired), so no tombstones. A row
-- deleted by hand is not seen by a read of changes; the periodic full read
-- drops an open transfer that is gone (as before, no read drops an item,
-- segment or node from memory).
--
-- catalog_change_seq stays for one release: the previous release's
-- coordinator reads it (docs/upgrading.md: a migration never breaks the
-- release before it). Its statement triggers stay too, but for the one a
-- node's batch paid for: segments_catalog_update, a statement trigger with
-- a transition table on every batch, goes, and the row trigger that sets a
-- segment's cat_xid (which a node's batch does not fire) takes a number
-- from the sequence instead. So the previous coordinator still learns
-- every change of a segment's owner, epoch or state, but no longer re-reads
-- the catalog for a node's counters (which it takes from the heartbeats).
-- A later migration drops the sequence, its triggers and functions.

DROP TRIGGER segments_catalog_update ON segments;

-- Rows that exist now get 0: older than any read's xmin, and the
-- coordinator's first read after a start is a full one.
ALTER TABLE items ADD COLUMN cat_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE segments ADD COLUMN cat_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE transfers ADD COLUMN cat_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE global_items ADD COLUMN cat_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE nodes ADD COLUMN cat_xid xid8 NOT NULL DEFAULT '0';

CREATE INDEX items_cat_xid ON items (cat_xid);
CREATE INDEX segments_cat_xid ON segments (cat_xid);
CREATE INDEX transfers_cat_xid ON transfers (cat_xid);
CREATE INDEX global_items_cat_xid ON global_items (cat_xid);
CREATE INDEX nodes_cat_xid ON nodes (cat_xid);

CREATE FUNCTION escrow_catalog_mark() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.cat_xid := pg_current_xact_id();
    RETURN NEW;
END;
$$;

CREATE TRIGGER items_catalog_mark BEFORE INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER items_catalog_remark BEFORE UPDATE ON items
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.total, OLD.unallocated, OLD.reduce_pending, OLD.state,
           OLD.segments_wanted, OLD.tail_segment)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.total, NEW.unallocated, NEW.reduce_pending, NEW.state,
           NEW.segments_wanted, NEW.tail_segment))
    EXECUTE FUNCTION escrow_catalog_mark();
-- For the previous release's coordinator (see above): a segment's change
-- also moves catalog_change_seq. Goes with the sequence.
CREATE FUNCTION escrow_catalog_mark_counted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.cat_xid := pg_current_xact_id();
    PERFORM nextval('catalog_change_seq');
    RETURN NEW;
END;
$$;

CREATE TRIGGER segments_catalog_mark BEFORE INSERT ON segments
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER segments_catalog_remark BEFORE UPDATE ON segments
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.seg_no, OLD.node_id, OLD.epoch, OLD.state, OLD.region)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.seg_no, NEW.node_id, NEW.epoch, NEW.state, NEW.region))
    EXECUTE FUNCTION escrow_catalog_mark_counted();
CREATE TRIGGER transfers_catalog_mark BEFORE INSERT ON transfers
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER transfers_catalog_remark BEFORE UPDATE ON transfers
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.from_segment, OLD.to_segment, OLD.from_region,
           OLD.to_region, OLD.qty, OLD.state)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.from_segment, NEW.to_segment, NEW.from_region,
           NEW.to_region, NEW.qty, NEW.state))
    EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER global_items_catalog_mark BEFORE INSERT ON global_items
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER global_items_catalog_remark BEFORE UPDATE ON global_items
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.global_total)
          IS DISTINCT FROM (NEW.tenant_id, NEW.item_id, NEW.global_total))
    EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER nodes_catalog_mark BEFORE INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE TRIGGER nodes_catalog_remark BEFORE UPDATE ON nodes
    FOR EACH ROW
    WHEN ((OLD.node_id, OLD.endpoint, OLD.incarnation, OLD.state)
          IS DISTINCT FROM (NEW.node_id, NEW.endpoint, NEW.incarnation, NEW.state))
    EXECUTE FUNCTION escrow_catalog_mark();
