-- SPDX-License-Identifier: Apache-2.0
-- escrow_partition_spans - every partition of holds and outbox with the days
-- it holds, read from its bounds: lo (its first day) to hi (the day after
-- its last); both NULL for a default partition. A holds partition spans
-- retention_settings.holds_part_days days (or fewer: one made next to an
-- older partition of another width is cut to fit); an outbox partition one
-- day. The bounds are read as PostgreSQL prints them, so under DateStyle
-- ISO (set for the call).
--
-- As of migration 0019_holds_partition_width.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE FUNCTION escrow_partition_spans()
RETURNS TABLE (tbl text, part text, lo date, hi date)
LANGUAGE sql STABLE SET datestyle TO 'ISO, YMD' AS $$
    SELECT pp.relname::text, c.relname::text, b.m[1]::date, b.m[2]::date
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_class pp ON pp.oid = i.inhparent
    CROSS JOIN LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                            'FROM \(''([0-9-]+)''\) TO \(''([0-9-]+)''\)') AS m) b
    WHERE pp.relname IN ('holds', 'outbox') AND pp.relnamespace = 'public'::regnamespace
$$;
