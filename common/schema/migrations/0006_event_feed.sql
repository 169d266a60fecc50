-- SPDX-License-Identifier: Apache-2.0
-- 0006_event_feed.sql - the event feed: a commit-safe order over the outbox,
-- and the cursors its consumers commit (the reader:
-- coordinator/feed/include/escrow_feed.h).
--
-- The pitfall this solves: event_id comes from an identity sequence when the
-- row is inserted, but transactions commit in any order. A reader that saw
-- event 105 committed and moved its cursor past it while 104's transaction
-- was still open would never see 104.
--
-- The scheme (sound, no locking, nothing extra on the commit path but a
-- column default):
--   * every outbox row records the id of the transaction that wrote it,
--     outbox.txid = pg_current_xact_id() (the top-level xid8, also inside a
--     savepoint), as a column DEFAULT: no trigger, no per-row work beyond
--     reading the xid the writing transaction already has;
--   * the feed order is (txid, event_id): transactions in the order of their
--     ids, the events of one transaction in event_id order;
--   * a reader only takes rows with txid < pg_snapshot_xmin(pg_current_snapshot()):
--     every transaction below the oldest one still running has ended, so
--     those rows are final (committed and visible, or rolled back and never
--     visible). A row that becomes visible later belongs to a transaction
--     that was still running (or had no id yet) at that snapshot, so its txid
--     is >= that xmin, which is above every txid already delivered: it sorts
--     after the cursor and is delivered then. Nothing is skipped.
--   * the price: a long-running transaction that holds an xid anywhere in the
--     cluster (an "idle in transaction" session, a prepared transaction)
--     holds the feed back until it ends. It delays, it never loses.
--
-- The default is STABLE, so adding the column does not rewrite the table:
-- rows written before this migration read the migration's own xid.
ALTER TABLE outbox ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();

-- The feed's scan: one tenant, (txid, event_id) after the cursor. Inserts land
-- at the right end of each tenant's range (xids grow), like outbox_item.
CREATE INDEX outbox_feed ON outbox (tenant_id, txid, event_id);

-- One row per consumer. The cursor is the feed position of the last event the
-- consumer processed: (cursor_txid, cursor_event_id), (0, 0) = before the
-- first event. It only moves forward (feed_commit's UPDATE ... WHERE the new
-- cursor is above the old one). item_id: the consumer's item filter, fixed
-- when it is created (a cursor is only meaningful for the filter it was
-- taken with); NULL = every item of the tenant.
CREATE TABLE feed_consumers (
    tenant_id       text NOT NULL
                    CONSTRAINT feed_consumers_tenant_format CHECK (tenant_id ~ '^[!-~]{1,64}$'),
    consumer        text NOT NULL
                    CONSTRAINT feed_consumers_name_format CHECK (consumer ~ '^[!-~]{1,64}$'),
    item_id         text
                    CONSTRAINT feed_consumers_item_format CHECK (item_id ~ '^[!-~]{1,128}$'),
    cursor_txid     xid8 NOT NULL DEFAULT '0',
    cursor_event_id bigint NOT NULL DEFAULT 0
                    CONSTRAINT feed_consumers_cursor_nonneg CHECK (cursor_event_id >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT feed_consumers_pkey PRIMARY KEY (tenant_id, consumer)
);
