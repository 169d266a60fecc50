-- SPDX-License-Identifier: Apache-2.0
-- escrow_catalog_mark - sets cat_xid of a catalog row (items, segments,
-- transfers, global_items, nodes) to the writing transaction's id when a
-- column the coordinator keeps in memory changes; the coordinator reads the
-- rows with cat_xid >= the xmin of its previous read's snapshot
-- (coord_db.c, coord_change.h). escrow_catalog_mark_counted, for the
-- segments, also moves catalog_change_seq for the previous release's
-- coordinator (escrow_catalog_changed.sql).
--
-- As of migration 0018_catalog_xid.
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_catalog_mark() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.cat_xid := pg_current_xact_id();
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER items_catalog_mark BEFORE INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER items_catalog_remark BEFORE UPDATE ON items
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.total, OLD.unallocated, OLD.reduce_pending, OLD.state,
           OLD.segments_wanted, OLD.tail_segment)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.total, NEW.unallocated, NEW.reduce_pending, NEW.state,
           NEW.segments_wanted, NEW.tail_segment))
    EXECUTE FUNCTION escrow_catalog_mark();
-- For the previous release's coordinator (see above): a segment's change
-- also moves catalog_change_seq. Goes with the sequence.
CREATE OR REPLACE FUNCTION escrow_catalog_mark_counted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.cat_xid := pg_current_xact_id();
    PERFORM nextval('catalog_change_seq');
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER segments_catalog_mark BEFORE INSERT ON segments
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER segments_catalog_remark BEFORE UPDATE ON segments
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.seg_no, OLD.node_id, OLD.epoch, OLD.state, OLD.region)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.seg_no, NEW.node_id, NEW.epoch, NEW.state, NEW.region))
    EXECUTE FUNCTION escrow_catalog_mark_counted();
CREATE OR REPLACE TRIGGER transfers_catalog_mark BEFORE INSERT ON transfers
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER transfers_catalog_remark BEFORE UPDATE ON transfers
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.from_segment, OLD.to_segment, OLD.from_region,
           OLD.to_region, OLD.qty, OLD.state)
          IS DISTINCT FROM
          (NEW.tenant_id, NEW.item_id, NEW.from_segment, NEW.to_segment, NEW.from_region,
           NEW.to_region, NEW.qty, NEW.state))
    EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER global_items_catalog_mark BEFORE INSERT ON global_items
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER global_items_catalog_remark BEFORE UPDATE ON global_items
    FOR EACH ROW
    WHEN ((OLD.tenant_id, OLD.item_id, OLD.global_total)
          IS DISTINCT FROM (NEW.tenant_id, NEW.item_id, NEW.global_total))
    EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER nodes_catalog_mark BEFORE INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION escrow_catalog_mark();
CREATE OR REPLACE TRIGGER nodes_catalog_remark BEFORE UPDATE ON nodes
    FOR EACH ROW
    WHEN ((OLD.node_id, OLD.endpoint, OLD.incarnation, OLD.state)
          IS DISTINCT FROM (NEW.node_id, NEW.endpoint, NEW.incarnation, NEW.state))
    EXECUTE FUNCTION escrow_catalog_mark();
