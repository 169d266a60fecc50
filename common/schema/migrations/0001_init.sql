-- SPDX-License-Identifier: Apache-2.0
-- 0001_init.sql - the escrow catalog and the system of record.
--
-- The database is the final arbiter: every rule that must never break is a
-- constraint here, with a name the code checks (segment/commit.c,
-- coordinator/pgerr.c). Counters change only by deltas under the epoch fence,
-- inside escrow_commit_batch(), written last in the transaction (the hot row).

CREATE TABLE tenants (
    tenant_id   text PRIMARY KEY
                CONSTRAINT tenants_id_format CHECK (tenant_id ~ '^[!-~]{1,64}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE regions (
    region      text PRIMARY KEY CONSTRAINT regions_name_format CHECK (region ~ '^[!-~]{1,64}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO regions (region) VALUES ('local');

CREATE TABLE nodes (
    node_id       text PRIMARY KEY CONSTRAINT nodes_id_format CHECK (node_id ~ '^[!-~]{1,64}$'),
    region        text NOT NULL DEFAULT 'local' REFERENCES regions,
    endpoint      text NOT NULL DEFAULT '',
    state         text NOT NULL DEFAULT 'up'
                  CONSTRAINT nodes_state_valid CHECK (state IN ('up', 'draining', 'down')),
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE items (
    tenant_id     text NOT NULL REFERENCES tenants,
    item_id       text NOT NULL CONSTRAINT items_id_format CHECK (item_id ~ '^[!-~]{1,128}$'),
    total         bigint NOT NULL CONSTRAINT items_total_nonneg CHECK (total >= 0),
    unallocated   bigint NOT NULL CONSTRAINT items_unallocated_nonneg CHECK (unallocated >= 0),
    max_per_order integer NOT NULL DEFAULT 0 CONSTRAINT items_max_per_order_nonneg CHECK (max_per_order >= 0),
    max_per_buyer integer NOT NULL DEFAULT 0 CONSTRAINT items_max_per_buyer_nonneg CHECK (max_per_buyer >= 0),
    hold_ttl_ms   integer NOT NULL DEFAULT 600000
                  CONSTRAINT items_hold_ttl_bounds CHECK (hold_ttl_ms BETWEEN 50 AND 86400000),
    state         text NOT NULL DEFAULT 'active'
                  CONSTRAINT items_state_valid CHECK (state IN ('active', 'paused', 'retired')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, item_id)
);

-- One slice of an item's stock, owned by one node at a time. epoch is the
-- fence: it rises on every change of owner and every counter write names the
-- epoch it believes in; a write with an old epoch matches zero rows.
-- hold_seq is the next hold sequence number of this segment; hold ids are
-- (segment_id << 40) | seq, so a hold id names its segment (and its owner).
-- last_batch is the id of the last batch that wrote the row: after a
-- connection loss during COMMIT it tells whether that batch committed.
CREATE TABLE segments (
    segment_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY
                CONSTRAINT segments_id_range CHECK (segment_id BETWEEN 1 AND 8388607),
    tenant_id   text NOT NULL,
    item_id     text NOT NULL,
    region      text NOT NULL DEFAULT 'local' REFERENCES regions,
    seg_no      integer NOT NULL CONSTRAINT segments_seg_no_nonneg CHECK (seg_no >= 0),
    node_id     text REFERENCES nodes,
    epoch       bigint NOT NULL DEFAULT 0,
    available   bigint NOT NULL,
    held        bigint NOT NULL DEFAULT 0,
    sold        bigint NOT NULL DEFAULT 0,
    hold_seq    bigint NOT NULL DEFAULT 1
                CONSTRAINT segments_hold_seq_range CHECK (hold_seq BETWEEN 1 AND 1099511627775),
    last_batch  bigint NOT NULL DEFAULT 0,
    state       text NOT NULL DEFAULT 'active'
                CONSTRAINT segments_state_valid CHECK (state IN ('active', 'draining', 'retired')),
    CONSTRAINT segments_counters_nonneg CHECK (available >= 0 AND held >= 0 AND sold >= 0),
    CONSTRAINT segments_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES items,
    CONSTRAINT segments_seg_no_unique UNIQUE (tenant_id, item_id, region, seg_no)
);
CREATE INDEX segments_node ON segments (node_id);

-- A hold: qty units reserved for one checkout until expires_at.
-- held -> converted (qty_sold units sold, the rest returned) | cancelled | expired.
-- holds_idempotency_key means "this key already has a hold, here it is",
-- never "failed": escrow_commit_batch() turns it into the answer.
CREATE TABLE holds (
    hold_id         bigint PRIMARY KEY,
    tenant_id       text NOT NULL,
    item_id         text NOT NULL,
    segment_id      bigint NOT NULL,
    buyer_id        text NOT NULL,
    qty             integer NOT NULL CONSTRAINT holds_qty_positive CHECK (qty > 0),
    qty_sold        integer NOT NULL DEFAULT 0
                    CONSTRAINT holds_qty_sold_range CHECK (qty_sold BETWEEN 0 AND qty),
    state           text NOT NULL
                    CONSTRAINT holds_state_valid
                    CHECK (state IN ('held', 'converted', 'cancelled', 'expired')),
    expires_at      timestamptz NOT NULL,
    extended        boolean NOT NULL DEFAULT false,
    idempotency_key text NOT NULL,
    request_hash    bigint NOT NULL,
    epoch           bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    CONSTRAINT holds_idempotency_key UNIQUE (tenant_id, idempotency_key),
    CONSTRAINT holds_ended_iff_final CHECK ((state = 'held') = (ended_at IS NULL)),
    CONSTRAINT holds_sold_iff_converted CHECK (state = 'converted' OR qty_sold = 0)
);
CREATE INDEX holds_live ON holds (segment_id) WHERE state = 'held';
CREATE INDEX holds_buyer ON holds (tenant_id, item_id, buyer_id);

-- Units a buyer holds or bought of an item, for items with max_per_buyer.
CREATE TABLE buyer_usage (
    tenant_id  text NOT NULL,
    item_id    text NOT NULL,
    buyer_id   text NOT NULL,
    used       bigint NOT NULL CONSTRAINT buyer_usage_nonneg CHECK (used >= 0),
    max_qty    integer NOT NULL,
    PRIMARY KEY (tenant_id, item_id, buyer_id),
    CONSTRAINT buyer_usage_within_limit CHECK (used <= max_qty)
);

-- Stock in motion between segments (or regions): planned -> sent -> received.
-- Units of a 'sent' transfer are in no segment; conservation counts them.
CREATE TABLE transfers (
    transfer_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    item_id      text NOT NULL,
    from_segment bigint,
    to_segment   bigint,
    from_region  text NOT NULL DEFAULT 'local',
    to_region    text NOT NULL DEFAULT 'local',
    qty          bigint NOT NULL CONSTRAINT transfers_qty_positive CHECK (qty > 0),
    state        text NOT NULL DEFAULT 'planned'
                 CONSTRAINT transfers_state_valid
                 CHECK (state IN ('planned', 'sent', 'received', 'cancelled')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    sent_at      timestamptz,
    received_at  timestamptz,
    CONSTRAINT transfers_item_fk FOREIGN KEY (tenant_id, item_id) REFERENCES items
);

-- Transactional outbox: one event per transition, in the same transaction.
CREATE TABLE outbox (
    event_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  text NOT NULL,
    item_id    text NOT NULL,
    segment_id bigint,
    hold_id    bigint,
    buyer_id   text,
    kind       text NOT NULL
               CONSTRAINT outbox_kind_valid
               CHECK (kind IN ('held', 'converted', 'cancelled', 'expired', 'extended',
                               'transfer_sent', 'transfer_received', 'restocked')),
    qty        bigint NOT NULL DEFAULT 0,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outbox_item ON outbox (tenant_id, item_id, event_id);

-- Conservation, per item: every unit is in a segment (available, held or
-- sold), in a transfer that was sent and not yet received, or unallocated.
CREATE VIEW conservation AS
SELECT i.tenant_id, i.item_id, i.total, i.unallocated,
       COALESCE(s.available, 0) AS available,
       COALESCE(s.held, 0)      AS held,
       COALESCE(s.sold, 0)      AS sold,
       COALESCE(t.in_flight, 0) AS in_flight,
       COALESCE(s.available, 0) + COALESCE(s.held, 0) + COALESCE(s.sold, 0)
           + COALESCE(t.in_flight, 0) + i.unallocated = i.total
       AND COALESCE(s.held, 0) + COALESCE(s.sold, 0) <= i.total AS ok
FROM items i
LEFT JOIN (SELECT tenant_id, item_id, sum(available) AS available, sum(held) AS held,
                  sum(sold) AS sold
           FROM segments GROUP BY tenant_id, item_id) s USING (tenant_id, item_id)
LEFT JOIN (SELECT tenant_id, item_id, sum(qty) AS in_flight
           FROM transfers WHERE state = 'sent' GROUP BY tenant_id, item_id) t
       USING (tenant_id, item_id);

-- The counters agree with the holds behind them, per segment.
CREATE VIEW segment_holds_agree AS
SELECT s.segment_id, s.tenant_id, s.item_id, s.held, s.sold,
       COALESCE(h.live, 0) AS holds_live, COALESCE(h.sold, 0) AS holds_sold,
       s.held = COALESCE(h.live, 0) AND s.sold = COALESCE(h.sold, 0) AS ok
FROM segments s
LEFT JOIN (SELECT segment_id,
                  sum(qty) FILTER (WHERE state = 'held') AS live,
                  sum(qty_sold) FILTER (WHERE state = 'converted') AS sold
           FROM holds GROUP BY segment_id) h USING (segment_id);

-- Final holds of the last minutes are reloaded by a node at start so that a
-- retry after a restart still gets its hold from memory.
CREATE INDEX holds_ended ON holds (segment_id, ended_at) WHERE state <> 'held';
