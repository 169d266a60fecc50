-- SPDX-License-Identifier: Apache-2.0
-- escrow_coord_fence - the coordinators' fence: in a session that carries
-- escrow.coord_epoch (a coordinator's), a write to any table is refused
-- (ES004) unless that epoch is the leader lease's (coord_leader), whose row
-- stays share-locked until the write commits. Its trigger, coord_fence, is
-- on every table but coord_leader and schema_migrations, once per statement.
--
-- As of migration 0014_coord_leader (unchanged since).
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_coord_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_mine  bigint := NULLIF(current_setting('escrow.coord_epoch', true), '')::bigint;
    v_epoch bigint;
BEGIN
    SELECT epoch INTO v_epoch FROM coord_leader FOR SHARE;
    IF v_epoch IS DISTINCT FROM v_mine THEN
        RAISE EXCEPTION 'escrow: this coordinator does not lead (its epoch %, the leader''s %)',
            v_mine, v_epoch USING ERRCODE = 'ES004';
    END IF;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
               AND NOT c.relispartition
               AND c.relname NOT IN ('coord_leader', 'schema_migrations')
    LOOP
        EXECUTE format('CREATE TRIGGER coord_fence BEFORE INSERT OR UPDATE OR DELETE ON %I '
                       'FOR EACH STATEMENT WHEN (current_setting(''escrow.coord_epoch'', true) <> '''') '
                       'EXECUTE FUNCTION escrow_coord_fence()', t);
    END LOOP;
END
$$;
