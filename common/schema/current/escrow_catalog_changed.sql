-- SPDX-License-Identifier: Apache-2.0
-- escrow_catalog_changed - takes a number from catalog_change_seq for every
-- statement that writes the catalog the coordinator keeps in memory; the
-- previous release's coordinator re-reads the catalog when the number moved.
-- Kept for it only (this release reads cat_xid: escrow_catalog_mark.sql);
-- an update of segments moves the number by its row trigger
-- (escrow_catalog_mark_counted), not by a statement trigger.
--
-- As of migration 0018_catalog_xid.
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_catalog_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        PERFORM nextval('catalog_change_seq');
    END IF;
    RETURN NULL;
END;
$$;

-- A nodes row counts only when its endpoint, incarnation or state changed:
-- the coordinator rewrites last_seen_at every second.
CREATE OR REPLACE FUNCTION escrow_catalog_node_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n USING (node_id)
               WHERE (o.endpoint, o.incarnation, o.state)
                     IS DISTINCT FROM (n.endpoint, n.incarnation, n.state)) THEN
        PERFORM nextval('catalog_change_seq');
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER items_catalog_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER items_catalog_update AFTER UPDATE ON items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER items_catalog_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER segments_catalog_insert AFTER INSERT ON segments
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER segments_catalog_delete AFTER DELETE ON segments
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER transfers_catalog_insert AFTER INSERT ON transfers
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER transfers_catalog_update AFTER UPDATE ON transfers
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER transfers_catalog_delete AFTER DELETE ON transfers
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER global_items_catalog_insert AFTER INSERT ON global_items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER global_items_catalog_update AFTER UPDATE ON global_items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER global_items_catalog_delete AFTER DELETE ON global_items
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER nodes_catalog_insert AFTER INSERT ON nodes
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER nodes_catalog_delete AFTER DELETE ON nodes
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE OR REPLACE TRIGGER nodes_catalog_update AFTER UPDATE ON nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_node_changed();
