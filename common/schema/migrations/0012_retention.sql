-- SPDX-License-Identifier: Apache-2.0
-- 0012_retention.sql - holds and outbox partitioned by day, an idempotency
-- window, and retention that drops whole partitions (docs/retention.md).
--
-- Until now the holds and outbox tables grew forever: the idempotency key
-- was unique forever and nothing removed an outbox row, so the random-key
-- index of holds outgrew memory on a busy shop and the commit path slowed.
--
--   * holds and outbox are partitioned by RANGE on a UTC day column
--     (holds.created_day, outbox.day; default escrow_today(), the day of the
--     transaction's start). One partition per day, named holds_pYYYYMMDD and
--     outbox_pYYYYMMDD, created ahead (escrow_partitions_ensure) by this
--     migration and by every retention run; holds_default and outbox_default
--     catch a row whose day has no partition (a region whose retention did
--     not run for longer than ahead_days), so a commit never fails for it.
--   * A unique constraint of a partitioned table must contain the partition
--     key: holds_pkey is (hold_id, created_day) and holds_idempotency_key is
--     (tenant_id, idempotency_key, created_day). Hold ids stay unique by
--     construction (segment id << 40 | the segment's hold_seq, which only
--     grows, under the epoch fence). Idempotency keys are unique within the
--     window: escrow_commit_batch looks a new key up in every partition of
--     the window (retention_settings.window_days whole days before today,
--     and today) and the unique index serializes two batches of the same day;
--     two batches on either side of midnight serialize on the day gate
--     (escrow_day_gate). A retry older than the window is a new request.
--   * segment_holds_agree adds holds_retired: the units sold and the holds of
--     each segment whose partition retention dropped, written in the same
--     transaction as the DROP.
--   * escrow_retention_plan() says, per partition, what a run would do and
--     why; escrow_retention_run() does it: a holds partition goes once its
--     day is older than the window and it has no live hold; an outbox
--     partition once its day is older than the window and every event-feed
--     consumer has read all of it, or anyway once it is older than
--     feed_max_days.
--
-- Existing rows are copied into the day partitions (the migration's time is
-- proportional to the history it moves).

CREATE TABLE retention_settings (
    only_row      boolean PRIMARY KEY DEFAULT true
                  CONSTRAINT retention_settings_one_row CHECK (only_row),
    window_days   integer NOT NULL DEFAULT 7
                  CONSTRAINT retention_window_range CHECK (window_days BETWEEN 1 AND 3650),
    feed_max_days integer NOT NULL DEFAULT 30
                  CONSTRAINT retention_feed_max_range CHECK (feed_max_days BETWEEN 1 AND 3650),
    ahead_days    integer NOT NULL DEFAULT 7
                  CONSTRAINT retention_ahead_range CHECK (ahead_days BETWEEN 1 AND 365),
    CONSTRAINT retention_feed_max_ge_window CHECK (feed_max_days >= window_days)
);
INSERT INTO retention_settings DEFAULT VALUES;

-- What the dropped holds partitions held, per segment.
CREATE TABLE holds_retired (
    segment_id bigint PRIMARY KEY,
    holds      bigint NOT NULL DEFAULT 0 CONSTRAINT holds_retired_holds_nonneg CHECK (holds >= 0),
    sold       bigint NOT NULL DEFAULT 0 CONSTRAINT holds_retired_sold_nonneg CHECK (sold >= 0)
);

-- One row per partition retention dropped: what a lagging consumer missed.
CREATE TABLE retention_log (
    dropped_at timestamptz NOT NULL DEFAULT now(),
    tbl        text NOT NULL,
    partition  text NOT NULL,
    day        date NOT NULL,
    rows       bigint NOT NULL,
    forced     text
);

CREATE FUNCTION escrow_today() RETURNS date
LANGUAGE sql STABLE AS $$ SELECT (now() AT TIME ZONE 'UTC')::date $$;

DROP VIEW segment_holds_agree;
ALTER TABLE holds RENAME TO holds_0011;
ALTER INDEX holds_pkey RENAME TO holds_0011_pkey;
ALTER INDEX holds_idempotency_key RENAME TO holds_0011_idempotency_key;
ALTER INDEX holds_live RENAME TO holds_0011_live;
ALTER INDEX holds_ended RENAME TO holds_0011_ended;

CREATE TABLE holds (
    hold_id         bigint NOT NULL,
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
    created_day     date NOT NULL DEFAULT escrow_today(),
    CONSTRAINT holds_pkey PRIMARY KEY (hold_id, created_day),
    CONSTRAINT holds_idempotency_key UNIQUE (tenant_id, idempotency_key, created_day),
    CONSTRAINT holds_ended_iff_final CHECK ((state = 'held') = (ended_at IS NULL)),
    CONSTRAINT holds_sold_iff_converted CHECK (state = 'converted' OR qty_sold = 0)
) PARTITION BY RANGE (created_day);
CREATE INDEX holds_live ON holds (segment_id) WHERE state = 'held';
CREATE INDEX holds_ended ON holds (segment_id, ended_at) WHERE state <> 'held';
CREATE TABLE holds_default PARTITION OF holds DEFAULT;

ALTER TABLE outbox RENAME TO outbox_0011;
ALTER INDEX outbox_pkey RENAME TO outbox_0011_pkey;
ALTER INDEX outbox_item RENAME TO outbox_0011_item;
ALTER INDEX outbox_feed RENAME TO outbox_0011_feed;

-- An identity column is not allowed on a partitioned table before
-- PostgreSQL 17: a sequence continues the old one's numbers.
CREATE SEQUENCE outbox_event_seq;
SELECT setval('outbox_event_seq', GREATEST(
    (SELECT last_value FROM outbox_event_id_seq), (SELECT COALESCE(max(event_id), 1) FROM outbox_0011)));

CREATE TABLE outbox (
    event_id   bigint NOT NULL DEFAULT nextval('outbox_event_seq'),
    tenant_id  text NOT NULL,
    item_id    text NOT NULL,
    segment_id bigint,
    hold_id    bigint,
    buyer_id   text,
    kind       text NOT NULL
               CONSTRAINT outbox_kind_valid
               CHECK (kind IN ('held', 'converted', 'cancelled', 'expired', 'extended',
                               'transfer_sent', 'transfer_received', 'transfer_cancelled',
                               'restocked', 'reduced', 'paused', 'resumed', 'retired',
                               'collapsed', 'split', 'quota_sent', 'quota_received',
                               'quota_refused', 'quota_returned')),
    qty        bigint NOT NULL DEFAULT 0,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text,
    txid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
    day        date NOT NULL DEFAULT escrow_today(),
    CONSTRAINT outbox_pkey PRIMARY KEY (event_id, day)
) PARTITION BY RANGE (day);
ALTER SEQUENCE outbox_event_seq OWNED BY outbox.event_id;
CREATE INDEX outbox_item ON outbox (tenant_id, item_id, event_id);
CREATE INDEX outbox_feed ON outbox (tenant_id, txid, event_id);
CREATE TABLE outbox_default PARTITION OF outbox DEFAULT;

-- Creates the day partitions of holds and outbox from p_from to p_to that
-- do not exist yet; returns how many it created. A day whose rows already
-- sit in the default partition is skipped (its rows stay there; escrowctl
-- retention shows them).
CREATE FUNCTION escrow_partitions_ensure(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_day date;
    v_tbl text;
    v_n   integer := 0;
BEGIN
    FOR v_day IN SELECT generate_series(p_from, p_to, '1 day')::date LOOP
        FOREACH v_tbl IN ARRAY ARRAY['holds', 'outbox'] LOOP
            CONTINUE WHEN to_regclass(v_tbl || '_p' || to_char(v_day, 'YYYYMMDD')) IS NOT NULL;
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               v_tbl || '_p' || to_char(v_day, 'YYYYMMDD'), v_tbl, v_day,
                               v_day + 1);
                v_n := v_n + 1;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'escrow: % rows of % are in %_default; partition not made',
                    v_tbl, v_day, v_tbl;
            END;
        END LOOP;
    END LOOP;
    RETURN v_n;
END
$$;

SELECT escrow_partitions_ensure(
    LEAST(escrow_today(),
          (SELECT min((created_at AT TIME ZONE 'UTC')::date) FROM holds_0011),
          (SELECT min((at AT TIME ZONE 'UTC')::date) FROM outbox_0011)),
    escrow_today() + 7);

INSERT INTO holds (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, qty_sold, state,
                   expires_at, extended, idempotency_key, request_hash, epoch, created_at,
                   ended_at, created_day)
SELECT hold_id, tenant_id, item_id, segment_id, buyer_id, qty, qty_sold, state, expires_at,
       extended, idempotency_key, request_hash, epoch, created_at, ended_at,
       (created_at AT TIME ZONE 'UTC')::date
FROM holds_0011;
DROP TABLE holds_0011;

INSERT INTO outbox (event_id, tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty, at,
                    actor, txid, day)
SELECT event_id, tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty, at, actor, txid,
       (at AT TIME ZONE 'UTC')::date
FROM outbox_0011;
DROP TABLE outbox_0011;

-- (segment_holds_agree, as in current/segment_holds_agree.sql)
CREATE VIEW segment_holds_agree AS
SELECT s.segment_id, s.tenant_id, s.item_id, s.held, s.sold,
       COALESCE(h.live, 0) AS holds_live, COALESCE(h.sold, 0) + COALESCE(r.sold, 0) AS holds_sold,
       s.held = COALESCE(h.live, 0) AND s.sold = COALESCE(h.sold, 0) + COALESCE(r.sold, 0) AS ok
FROM segments s
LEFT JOIN (SELECT segment_id,
                  sum(qty) FILTER (WHERE state = 'held') AS live,
                  sum(qty_sold) FILTER (WHERE state = 'converted') AS sold
           FROM holds GROUP BY segment_id) h USING (segment_id)
LEFT JOIN holds_retired r USING (segment_id);

-- (escrow_day_gate, as in current/escrow_day_gate.sql)
CREATE OR REPLACE FUNCTION escrow_day_gate(p_day date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_d integer := p_day - date '2000-01-01';
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1163085895, v_d);
    PERFORM pg_advisory_lock(1163085895, v_d - 1), pg_advisory_unlock(1163085895, v_d - 1);
    PERFORM pg_advisory_lock(1163085895, v_d + 1), pg_advisory_unlock(1163085895, v_d + 1);
END
$$;

-- (escrow_retention_plan, as in current/escrow_retention_plan.sql)
CREATE OR REPLACE FUNCTION escrow_retention_plan()
RETURNS TABLE (tbl text, part text, part_day date, est_rows bigint, bytes bigint,
               action text, reason text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_set   retention_settings;
    v_today date := escrow_today();
    v_n     bigint;
    v_lag   text;
    p       record;
BEGIN
    SELECT * INTO STRICT v_set FROM retention_settings;
    FOR p IN
        SELECT pp.relname::text AS parent, c.relname::text AS name, c.reltuples,
               CASE WHEN c.relname ~ '_p[0-9]{8}$'
                    THEN to_date(right(c.relname, 8), 'YYYYMMDD') END AS d
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class pp ON pp.oid = i.inhparent
        WHERE pp.relname IN ('holds', 'outbox') AND pp.relnamespace = 'public'::regnamespace
        ORDER BY 1, 4 NULLS LAST
    LOOP
        tbl := p.parent;
        part := p.name;
        part_day := p.d;
        bytes := pg_total_relation_size(p.name::regclass);
        IF pg_relation_size(p.name::regclass) < 256 * 1024 * 1024 OR p.reltuples < 0 THEN
            EXECUTE format('SELECT count(*) FROM %I', p.name) INTO est_rows;
        ELSE
            est_rows := p.reltuples::bigint;
        END IF;
        action := 'keep';
        IF p.d IS NULL THEN
            reason := 'default partition: rows of a day without a partition';
        ELSIF p.d >= v_today THEN
            reason := 'today or ahead';
        ELSIF p.d >= v_today - v_set.window_days THEN
            reason := 'inside the idempotency window';
        ELSIF p.parent = 'holds' THEN
            EXECUTE format('SELECT count(*) FROM %I WHERE state = ''held''', p.name) INTO v_n;
            IF v_n > 0 THEN
                reason := v_n || ' live holds';
            ELSE
                action := 'drop';
                reason := 'older than the window, no live hold';
            END IF;
        ELSE
            EXECUTE format(
                'SELECT string_agg(c.tenant_id || ''/'' || c.consumer, '', '' '
                'ORDER BY c.tenant_id, c.consumer) FROM feed_consumers c WHERE EXISTS ('
                'SELECT 1 FROM %I o WHERE o.tenant_id = c.tenant_id '
                'AND (c.item_id IS NULL OR o.item_id = c.item_id) '
                'AND (o.txid, o.event_id) > (c.cursor_txid, c.cursor_event_id))', p.name)
                INTO v_lag;
            IF v_lag IS NULL THEN
                action := 'drop';
                reason := 'older than the window, read by every consumer';
            ELSIF p.d < v_today - v_set.feed_max_days THEN
                action := 'drop';
                reason := 'forced: older than feed_max_days, unread by ' || v_lag;
            ELSE
                reason := 'unread by ' || v_lag;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- (escrow_retention_run, as in current/escrow_retention_run.sql)
CREATE OR REPLACE FUNCTION escrow_retention_run()
RETURNS TABLE (tbl text, part text, part_day date, est_rows bigint, bytes bigint,
               action text, reason text)
LANGUAGE plpgsql AS $$
DECLARE
    p record;
BEGIN
    PERFORM pg_advisory_xact_lock(1163085896, 0);
    PERFORM set_config('lock_timeout', '5s', true);
    PERFORM escrow_partitions_ensure(escrow_today(),
                                     escrow_today() + (SELECT s.ahead_days
                                                       FROM retention_settings s));
    FOR p IN SELECT * FROM escrow_retention_plan() x WHERE x.action = 'drop' LOOP
        IF p.tbl = 'holds' THEN
            EXECUTE format(
                'INSERT INTO holds_retired AS t (segment_id, holds, sold) '
                'SELECT h.segment_id, count(*), '
                'COALESCE(sum(h.qty_sold) FILTER (WHERE h.state = ''converted''), 0) '
                'FROM %I h GROUP BY h.segment_id ON CONFLICT (segment_id) DO UPDATE '
                'SET holds = t.holds + EXCLUDED.holds, sold = t.sold + EXCLUDED.sold', p.part);
        END IF;
        EXECUTE format('DROP TABLE %I', p.part);
        INSERT INTO retention_log (tbl, partition, day, rows, forced)
        VALUES (p.tbl, p.part, p.part_day, p.est_rows,
                CASE WHEN p.reason LIKE 'forced:%' THEN p.reason END);
        tbl := p.tbl;
        part := p.part;
        part_day := p.part_day;
        est_rows := p.est_rows;
        bytes := p.bytes;
        action := 'dropped';
        reason := p.reason;
        RETURN NEXT;
    END LOOP;
END
$$;

-- (escrow_commit_batch, as in current/escrow_commit_batch.sql)
CREATE OR REPLACE FUNCTION escrow_commit_batch(
    p_batch   bigint,
    s_id      bigint[], s_epoch bigint[], s_d_avail bigint[], s_d_held bigint[],
    s_d_sold  bigint[], s_hold_seq bigint[],
    r_hold    bigint[], r_seg bigint[], r_tenant text[], r_item text[], r_buyer text[],
    r_qty     integer[], r_key text[], r_hash bigint[], r_expires_ms bigint[],
    r_limit   integer[], r_epoch bigint[],
    t_hold    bigint[], t_kind text[], t_sold integer[], t_expires_ms bigint[],
    t_actor   text[],
    x_id      bigint[], x_kind text[], x_seg bigint[], x_qty bigint[])
RETURNS TABLE (o_req_hold bigint, o_outcome text, o_hold_id bigint, o_segment_id bigint,
               o_item_id text, o_buyer_id text, o_qty integer, o_qty_sold integer,
               o_state text, o_expires_ms bigint, o_extended boolean, o_hash bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_dup    bigint[];
    v_lim    bigint[];
    v_n      bigint;
    v_xid    bigint[];
    v_xstate text[];
    v_xqty   bigint[];
    v_xseg   bigint[];
    v_xdelta bigint[];
    v_day    date;
    v_from   date;
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(x_seg) AS x(seg) WHERE NOT (x.seg = ANY (s_id))) THEN
        RAISE EXCEPTION 'escrow: a transfer names a segment outside the batch'
            USING ERRCODE = 'ES003';
    END IF;

    -- 1. new holds. A key is unique within the idempotency window: looked up
    -- in the window's day partitions (after the day gate, in a fresh
    -- snapshot), and the unique index on (tenant, key, day) settles two
    -- batches of the same day. A key seen only before the window is new.
    v_day := escrow_today();
    SELECT v_day - s.window_days INTO STRICT v_from FROM retention_settings s;
    v_dup := '{}';
    IF cardinality(r_hold) > 0 THEN
        PERFORM escrow_day_gate(v_day);
        SELECT COALESCE(array_agg(r.hold_id), '{}') INTO v_dup
        FROM unnest(r_hold, r_tenant, r_key) AS r(hold_id, tenant_id, key)
        WHERE EXISTS (SELECT 1 FROM holds h
                      WHERE h.tenant_id = r.tenant_id AND h.idempotency_key = r.key
                        AND h.created_day BETWEEN v_from AND v_day);
    END IF;
    WITH r AS (
        SELECT * FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty, r_key, r_hash,
                             r_expires_ms, r_epoch)
               AS r(hold_id, segment_id, tenant_id, item_id, buyer_id, qty, key, hash,
                    expires_at, epoch)
        WHERE NOT (r.hold_id = ANY (v_dup))
    ), ins AS (
        INSERT INTO holds AS h (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, state,
                                expires_at, idempotency_key, request_hash, epoch, created_day)
        SELECT r.hold_id, r.tenant_id, r.item_id, r.segment_id, r.buyer_id, r.qty, 'held',
               to_timestamp(r.expires_at / 1000.0), r.key, r.hash, r.epoch, v_day
        FROM r
        ON CONFLICT ON CONSTRAINT holds_idempotency_key DO NOTHING
        RETURNING h.hold_id
    )
    SELECT v_dup || COALESCE(array_agg(r.hold_id), '{}') INTO v_dup
    FROM r WHERE r.hold_id NOT IN (SELECT ins.hold_id FROM ins);

    IF cardinality(v_dup) > 0 THEN
        RETURN QUERY
        SELECT r.hold_id, 'duplicate'::text, h.hold_id, h.segment_id, h.item_id, h.buyer_id,
               h.qty, h.qty_sold, h.state,
               round(extract(epoch FROM h.expires_at) * 1000)::bigint, h.extended,
               h.request_hash
        FROM unnest(r_hold, r_tenant, r_key) AS r(hold_id, tenant_id, key)
        JOIN holds h ON h.tenant_id = r.tenant_id AND h.idempotency_key = r.key
                    AND h.created_day BETWEEN v_from AND v_day
        WHERE r.hold_id = ANY (v_dup);
    END IF;

    -- 2. per-buyer maximum (the database is the arbiter across segments)
    WITH r AS (
        SELECT * FROM unnest(r_hold, r_tenant, r_item, r_buyer, r_qty, r_limit)
               AS r(hold_id, tenant_id, item_id, buyer_id, qty, lim)
        WHERE r.lim > 0 AND NOT (r.hold_id = ANY (v_dup))
    ), up AS (
        INSERT INTO buyer_usage AS b (tenant_id, item_id, buyer_id, used, max_qty)
        SELECT r.tenant_id, r.item_id, r.buyer_id, r.qty, r.lim FROM r
        ON CONFLICT (tenant_id, item_id, buyer_id) DO UPDATE
            SET used = b.used + EXCLUDED.used, max_qty = EXCLUDED.max_qty
            WHERE b.used + EXCLUDED.used <= EXCLUDED.max_qty
        RETURNING b.tenant_id, b.item_id, b.buyer_id
    )
    SELECT COALESCE(array_agg(r.hold_id), '{}') INTO v_lim
    FROM r WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.tenant_id = r.tenant_id
                             AND up.item_id = r.item_id AND up.buyer_id = r.buyer_id);

    IF cardinality(v_lim) > 0 THEN
        EXECUTE 'DELETE FROM holds h WHERE h.hold_id = ANY ($1) AND h.created_day = $2'
            USING v_lim, v_day;
        RETURN QUERY
        SELECT l, 'buyer_limit'::text, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
               NULL::integer, NULL::integer, NULL::text, NULL::bigint, NULL::boolean,
               NULL::bigint
        FROM unnest(v_lim) AS l;
    END IF;

    -- 3. outbox events of the accepted reserves, from the arguments
    INSERT INTO outbox (tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty, actor)
    SELECT r.tenant_id, r.item_id, r.seg, r.hold_id, r.buyer_id, 'held', r.qty, NULL
    FROM unnest(r_hold, r_seg, r_tenant, r_item, r_buyer, r_qty)
         AS r(hold_id, seg, tenant_id, item_id, buyer_id, qty)
    WHERE NOT (r.hold_id = ANY (v_dup)) AND NOT (r.hold_id = ANY (v_lim));

    -- 4. transitions, only from 'held'; their outbox events and the units
    -- that went back to the shelf (no longer counted against the buyer) come
    -- from the updated rows themselves. Planned per call (EXECUTE): a cached
    -- generic plan made while the table was small scans it sequentially.
    IF cardinality(t_hold) > 0 THEN
        EXECUTE $q$
        WITH t AS (
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::bigint[],
                                 $5::text[]) AS t(hold_id, kind, sold, expires, actor)
        ), u AS (
            UPDATE holds h
            SET state = CASE WHEN t.kind = 'extended' THEN 'held' ELSE t.kind END,
                qty_sold = CASE WHEN t.kind = 'converted' THEN t.sold ELSE 0 END,
                ended_at = CASE WHEN t.kind = 'extended' THEN NULL ELSE clock_timestamp() END,
                expires_at = CASE WHEN t.expires > 0 THEN to_timestamp(t.expires / 1000.0)
                                  ELSE h.expires_at END,
                extended = h.extended OR t.kind = 'extended'
            FROM t
            WHERE h.hold_id = t.hold_id AND h.state = 'held'
              AND NOT (t.kind = 'extended' AND h.extended)
            RETURNING h.tenant_id, h.item_id, h.segment_id, h.hold_id, h.buyer_id, h.qty,
                      h.qty_sold, t.kind, t.actor
        ), ev AS (
            INSERT INTO outbox (tenant_id, item_id, segment_id, hold_id, buyer_id, kind, qty,
                                actor)
            SELECT u.tenant_id, u.item_id, u.segment_id, u.hold_id, u.buyer_id, u.kind,
                   CASE u.kind WHEN 'converted' THEN u.qty_sold ELSE u.qty END,
                   NULLIF(u.actor, '')
            FROM u
        ), bu AS (
            UPDATE buyer_usage b SET used = b.used - x.ret
            FROM (SELECT u.tenant_id, u.item_id, u.buyer_id, sum(u.qty - u.qty_sold) AS ret
                  FROM u WHERE u.kind <> 'extended'
                  GROUP BY u.tenant_id, u.item_id, u.buyer_id) x
            WHERE b.tenant_id = x.tenant_id AND b.item_id = x.item_id
              AND b.buyer_id = x.buyer_id AND x.ret > 0
        )
        SELECT count(*) FROM u
        $q$ INTO v_n USING t_hold, t_kind, t_sold, t_expires_ms, t_actor;
        IF v_n <> cardinality(t_hold) THEN
            RAISE EXCEPTION 'escrow: hold state diverged (% of % transitions applied)',
                v_n, cardinality(t_hold) USING ERRCODE = 'ES002';
        END IF;
    END IF;

    -- 5. transfers: each step only from the state that allows it
    IF cardinality(x_id) > 0 THEN
        WITH x AS (
            SELECT * FROM unnest(x_id, x_kind, x_seg, x_qty) AS x(id, kind, seg, qty)
        ), g AS (
            UPDATE transfers t
            SET state = CASE WHEN x.qty > 0 THEN 'sent' ELSE 'cancelled' END,
                qty = CASE WHEN x.qty > 0 THEN x.qty ELSE t.qty END,
                sent_at = clock_timestamp(),
                sent_batch = p_batch
            FROM x
            WHERE x.kind = 'give' AND t.transfer_id = x.id AND t.state = 'planned'
              AND t.from_segment = x.seg AND x.qty >= 0
            RETURNING t.transfer_id AS id, t.state, x.qty AS moved, x.seg, -x.qty AS delta,
                      t.tenant_id, t.item_id
        ), r AS (
            UPDATE transfers t
            SET state = 'received', received_at = clock_timestamp(), received_batch = p_batch
            FROM x
            WHERE x.kind = 'receive' AND t.transfer_id = x.id AND t.state = 'sent'
              AND t.to_segment = x.seg
            RETURNING t.transfer_id AS id, t.state, t.qty AS moved, x.seg, t.qty AS delta,
                      t.tenant_id, t.item_id
        ), moved AS (
            SELECT * FROM g UNION ALL SELECT * FROM r
        ), ev AS (
            INSERT INTO outbox (tenant_id, item_id, segment_id, kind, qty)
            SELECT m.tenant_id, m.item_id, m.seg, 'transfer_' || m.state, m.moved FROM moved m
        )
        SELECT COALESCE(array_agg(m.id), '{}'), COALESCE(array_agg(m.state), '{}'),
               COALESCE(array_agg(m.moved), '{}'), COALESCE(array_agg(m.seg), '{}'),
               COALESCE(array_agg(m.delta), '{}')
        INTO v_xid, v_xstate, v_xqty, v_xseg, v_xdelta
        FROM moved m;

        RETURN QUERY
        SELECT x.id, 'xfer'::text, NULL::bigint, x.seg, NULL::text, NULL::text,
               COALESCE(m.moved, 0)::integer, NULL::integer, COALESCE(m.state, 'stale'),
               NULL::bigint, NULL::boolean, NULL::bigint
        FROM unnest(x_id, x_seg) AS x(id, seg)
        LEFT JOIN unnest(v_xid, v_xstate, v_xqty) AS m(id, state, moved) ON m.id = x.id;
    ELSE
        v_xseg := '{}';
        v_xdelta := '{}';
    END IF;

    -- 6. the hot rows, last: deltas under the epoch fence
    UPDATE segments s
    SET available = s.available + d.d_avail + COALESCE(x.q, 0) + COALESCE(xd.d, 0),
        held      = s.held + d.d_held - COALESCE(x.q, 0),
        sold      = s.sold + d.d_sold,
        hold_seq  = GREATEST(s.hold_seq, d.seq),
        last_batch = p_batch
    FROM unnest(s_id, s_epoch, s_d_avail, s_d_held, s_d_sold, s_hold_seq)
             AS d(segment_id, epoch, d_avail, d_held, d_sold, seq)
    LEFT JOIN (SELECT r.seg, sum(r.qty) AS q
               FROM unnest(r_hold, r_seg, r_qty) AS r(hold_id, seg, qty)
               WHERE r.hold_id = ANY (v_dup) OR r.hold_id = ANY (v_lim)
               GROUP BY r.seg) x ON x.seg = d.segment_id
    LEFT JOIN (SELECT m.seg, sum(m.delta) AS d
               FROM unnest(v_xseg, v_xdelta) AS m(seg, delta)
               GROUP BY m.seg) xd ON xd.seg = d.segment_id
    WHERE s.segment_id = d.segment_id AND s.epoch = d.epoch AND s.state <> 'retired';
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n <> cardinality(s_id) THEN
        RAISE EXCEPTION 'escrow: segment fenced (% of % segments at the expected epoch)',
            v_n, cardinality(s_id) USING ERRCODE = 'ES001';
    END IF;
END
$fn$;
