-- SPDX-License-Identifier: Apache-2.0
-- 0005_monitor.sql - the coordinator's invariant monitor writes its last
-- result here, so that `escrowctl status` can show it without asking the
-- coordinator (and shows a stale result as stale).
--
-- One row per check (name 'conservation': the conservation view, transfers
-- in flight included, plus segment_holds_agree). The coordinator upserts it
-- after every run; it is never the record of anything, only a report:
--   ok          no item and no segment violated
--   violations  items violating conservation + segments whose counters
--               disagree with their holds (or are negative)
--   items, segments   how many were checked
--   checked_at  when the check's snapshot was taken
--   check_ms    the coordinator's --check-ms: a row older than a few
--               periods means the monitor is not running
--   detail      the first violations, one per line, for humans
CREATE TABLE monitor (
    name       text PRIMARY KEY,
    ok         boolean NOT NULL,
    violations bigint NOT NULL DEFAULT 0,
    items      bigint NOT NULL DEFAULT 0,
    segments   bigint NOT NULL DEFAULT 0,
    checked_at timestamptz NOT NULL,
    check_ms   integer NOT NULL,
    detail     text NOT NULL DEFAULT ''
);
