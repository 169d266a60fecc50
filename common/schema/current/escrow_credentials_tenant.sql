-- SPDX-License-Identifier: Apache-2.0
-- escrow_credentials_tenant - the trigger that keeps a tenant key tied to a
-- registered tenant: '*' (an admin key) is not a row of tenants, so a
-- foreign key cannot say it. Raises 23503 with constraint
-- credentials_tenant_fk, as a foreign key would.
--
-- As of migration 0009_credentials (unchanged since), with its trigger.
--
-- Checked against the migrations by tests/integration/schema_current.sh: the
-- migrations are the record (they never change once released); a new
-- migration that changes this object changes this file in the same commit.

CREATE OR REPLACE FUNCTION escrow_credentials_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tenant_id <> '*' AND NOT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = NEW.tenant_id)
    THEN
        RAISE EXCEPTION 'unknown tenant %', NEW.tenant_id
            USING ERRCODE = '23503', CONSTRAINT = 'credentials_tenant_fk';
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER credentials_tenant BEFORE INSERT OR UPDATE OF tenant_id ON credentials
    FOR EACH ROW EXECUTE FUNCTION escrow_credentials_tenant();
