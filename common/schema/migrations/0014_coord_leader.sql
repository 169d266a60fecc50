-- SPDX-License-Identifier: Apache-2.0
-- 0014_coord_leader.sql - one leading coordinator per region, by a lease
-- held here (coordinator/daemon/coord_leader.h).
--
-- coord_leader has one row. A coordinator takes the lease with a
-- conditional UPDATE (only once expires_at has passed, or when the row
-- names the same coordinator, restarted) that bumps epoch; the leader
-- renews it with UPDATE ... WHERE epoch = its own. A coordinator's session
-- carries its epoch in the setting escrow.coord_epoch (-1 while it does not
-- lead), and every table has a statement trigger that, in such a session
-- only, compares it with the row under FOR SHARE: a deposed leader's write
-- is refused (ES004), and a takeover (its UPDATE waits for the share lock)
-- comes after every write that passed the check, so the new leader's
-- catalog read sees them. Sessions without the setting (nodes, escrowctl)
-- only pay the trigger's WHEN test.

CREATE TABLE coord_leader (
    one        boolean PRIMARY KEY DEFAULT true CONSTRAINT coord_leader_one CHECK (one),
    epoch      bigint NOT NULL DEFAULT 0,
    holder     text NOT NULL DEFAULT '',
    since      timestamptz,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO coord_leader DEFAULT VALUES;

CREATE FUNCTION escrow_coord_fence() RETURNS trigger LANGUAGE plpgsql AS $$
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
