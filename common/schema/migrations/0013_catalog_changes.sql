-- SPDX-License-Identifier: Apache-2.0
-- 0013_catalog_changes.sql - a change counter for the catalog the
-- coordinator keeps in memory (items, segments, transfers, global items,
-- and the nodes' identity and state).
--
-- Every statement that changes at least one row of these tables takes a
-- number from catalog_change_seq (a sequence: no row lock, so concurrent commits never
-- wait on it). The coordinator reads the sequence once per poll, a query
-- that costs next to nothing, and reads the whole catalog only when the
-- number moved (and once more after it stopped moving, for a transaction
-- that committed after the number was read), plus a periodic full read as
-- a safety net. A nodes row counts only when its endpoint, incarnation or
-- state changes: the coordinator rewrites last_seen_at every second.

CREATE SEQUENCE catalog_change_seq;

CREATE FUNCTION escrow_catalog_changed() RETURNS trigger
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
CREATE FUNCTION escrow_catalog_node_changed() RETURNS trigger
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

CREATE TRIGGER items_catalog_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER items_catalog_update AFTER UPDATE ON items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER items_catalog_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER segments_catalog_insert AFTER INSERT ON segments
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER segments_catalog_update AFTER UPDATE ON segments
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER segments_catalog_delete AFTER DELETE ON segments
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER transfers_catalog_insert AFTER INSERT ON transfers
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER transfers_catalog_update AFTER UPDATE ON transfers
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER transfers_catalog_delete AFTER DELETE ON transfers
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER global_items_catalog_insert AFTER INSERT ON global_items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER global_items_catalog_update AFTER UPDATE ON global_items
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER global_items_catalog_delete AFTER DELETE ON global_items
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER nodes_catalog_insert AFTER INSERT ON nodes
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER nodes_catalog_delete AFTER DELETE ON nodes
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_changed();
CREATE TRIGGER nodes_catalog_update AFTER UPDATE ON nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION escrow_catalog_node_changed();
