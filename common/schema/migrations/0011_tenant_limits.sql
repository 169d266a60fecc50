-- SPDX-License-Identifier: Apache-2.0
-- 0010_tenant_limits.sql - a tenant's own limits at the segment nodes
-- (segment/node/node_fair.h), set with `escrowctl tenant limits`.
--
-- NULL = the node's default (escrow-segment --rate-tenant and
-- --live-holds-tenant). rate_per_s: requests per second per node, 0 = no
-- rate limit; rate_burst: the bucket's size, NULL or 0 = one second's
-- worth; live_holds_max: live holds per node, 0 = only the node's own
-- maximum. Nodes re-read these columns every second.

ALTER TABLE tenants
    ADD COLUMN rate_per_s integer
        CONSTRAINT tenants_rate_per_s CHECK (rate_per_s BETWEEN 0 AND 1000000),
    ADD COLUMN rate_burst integer
        CONSTRAINT tenants_rate_burst CHECK (rate_burst BETWEEN 0 AND 1000000),
    ADD COLUMN live_holds_max integer
        CONSTRAINT tenants_live_holds_max CHECK (live_holds_max BETWEEN 0 AND 4194304);
