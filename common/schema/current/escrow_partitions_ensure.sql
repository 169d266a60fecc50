-- SPDX-License-Identifier: Apache-2.0
-- escrow_partitions_ensure - creates the day partitions of holds and outbox
-- from p_from to p_to that do not exist yet (holds_pYYYYMMDD,
-- outbox_pYYYYMMDD); returns how many it created. A day whose rows already
-- sit in the default partition is skipped (its rows stay there; escrowctl
-- retention shows them).
--
-- As of migration 0012_retention.
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE FUNCTION escrow_partitions_ensure(p_from date, p_to date) RETURNS integer
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
