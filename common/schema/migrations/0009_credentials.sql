-- SPDX-License-Identifier: Apache-2.0
-- 0009_credentials.sql - tenant and admin keys (common/auth.h).
--
-- A key is shown once, as esk_<key_id>_<secret>, by `escrowctl key create`
-- or `escrowctl admin-key create`; this table keeps only
-- BLAKE2b-256(secret || key_id), so reading it lets nobody authenticate.
-- tenant_id names the tenant whose requests the key may send, or '*' for
-- an admin key (operators: AdminReq, quota moves, operator release, and any
-- tenant's requests). A revoked key keeps its row (revoked_at set) for the
-- audit trail; daemons read only the live rows, every second
-- (common/auth_guard.h), so a revocation takes effect within that period.
-- The cluster key of the daemons' internal requests is not stored here: it
-- is one file shared by every node and coordinator (--cluster-key).

CREATE TABLE credentials (
    key_id      text PRIMARY KEY
                CONSTRAINT credentials_key_id_format CHECK (key_id ~ '^[0-9a-f]{16}$'),
    tenant_id   text NOT NULL
                CONSTRAINT credentials_tenant_format CHECK (tenant_id ~ '^[!-~]{1,64}$'),
    secret_hash bytea NOT NULL
                CONSTRAINT credentials_hash_len CHECK (octet_length(secret_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE INDEX credentials_tenant ON credentials (tenant_id) WHERE revoked_at IS NULL;

-- A tenant key belongs to a registered tenant; '*' (admin) is not a row of
-- tenants, so a foreign key cannot say it: a trigger does.
CREATE FUNCTION escrow_credentials_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tenant_id <> '*' AND NOT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = NEW.tenant_id)
    THEN
        RAISE EXCEPTION 'unknown tenant %', NEW.tenant_id
            USING ERRCODE = '23503', CONSTRAINT = 'credentials_tenant_fk';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER credentials_tenant BEFORE INSERT OR UPDATE OF tenant_id ON credentials
    FOR EACH ROW EXECUTE FUNCTION escrow_credentials_tenant();
