-- SPDX-License-Identifier: Apache-2.0
-- escrow_partitions_ensure - creates the partitions of holds and outbox that
-- the days from p_from to p_to need and do not have yet; returns how many it
-- created. An outbox partition holds one day (outbox_pYYYYMMDD); a holds
-- partition retention_settings.holds_part_days days (holds_pYYYYMMDD, named
-- after its first day), aligned on multiples of that many days from Monday
-- 2000-01-03 (7: Monday to Sunday), and cut to fit between the partitions
-- that exist (after a change of the width). A span whose rows already sit
-- in the default partition is not made (its rows stay there; escrowctl
-- retention shows them): the next span starts the day after.
--
-- As of migration 0019_holds_partition_width (0012_retention made day
-- partitions of both).
--
-- Checked against the migrations by tests/integration/schema_current.sh.

CREATE OR REPLACE FUNCTION escrow_partitions_ensure(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_tbl   text;
    v_width integer;
    v_day   date;
    v_lo    date;
    v_hi    date;
    v_floor date;
    v_n     integer := 0;
BEGIN
    FOREACH v_tbl IN ARRAY ARRAY['holds', 'outbox'] LOOP
        v_width := 1;
        IF v_tbl = 'holds' THEN
            SELECT s.holds_part_days INTO STRICT v_width FROM retention_settings s;
        END IF;
        v_day := p_from;
        v_floor := NULL;
        WHILE v_day <= p_to LOOP
            -- a partition that holds the day already: on past its last day
            SELECT s.hi INTO v_hi FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.lo <= v_day AND v_day < s.hi;
            IF FOUND THEN
                v_day := v_hi;
                CONTINUE;
            END IF;
            v_lo := date '2000-01-03' + floor((v_day - date '2000-01-03') / v_width::numeric)::integer * v_width;
            v_hi := v_lo + v_width;
            SELECT GREATEST(v_lo, max(s.hi), v_floor) INTO v_lo FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.hi <= v_day;
            SELECT LEAST(v_hi, min(s.lo)) INTO v_hi FROM escrow_partition_spans() s
            WHERE s.tbl = v_tbl AND s.lo > v_day;
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               v_tbl || '_p' || to_char(v_lo, 'YYYYMMDD'), v_tbl, v_lo, v_hi);
                v_n := v_n + 1;
                v_day := v_hi;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'escrow: % rows of % to % are in %_default; partition not made',
                    v_tbl, v_lo, v_hi - 1, v_tbl;
                v_day := v_day + 1;
                v_floor := v_day;
            END;
        END LOOP;
    END LOOP;
    RETURN v_n;
END
$$;
