-- SPDX-License-Identifier: Apache-2.0
-- escrow_today - the UTC day of the transaction's start: the partition key
-- of holds (created_day) and outbox (day).
--
-- As of migration 0012_retention.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE FUNCTION escrow_today() RETURNS date
LANGUAGE sql STABLE AS $$ SELECT (now() AT TIME ZONE 'UTC')::date $$;
