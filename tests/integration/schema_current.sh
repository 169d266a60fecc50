#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# schema_current.sh - common/schema/current/*.sql state each SQL function,
# view and trigger as the migrations leave it. Two databases in one private
# PostgreSQL: "escrow" gets the migrations (escrowctl migrate); "current"
# gets them too, then loses every function, view and trigger of the public
# schema, then gets current/*.sql. PostgreSQL prints each object back
# (pg_get_functiondef, pg_get_viewdef, pg_get_triggerdef) and the two
# databases must print the same text: a function body differs to the byte,
# a view or a signature as PostgreSQL parsed it (spacing does not count),
# and an object missing from current/ (or only in it) shows up as a
# difference. Each current/ file must also be named after an object it
# defines.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

current_dir="$ESC_SRC/common/schema/current"
work=$(mktemp -d /tmp/escrow-schema-current.XXXXXX)
esc_on_exit "rm -rf '$work'"

# Every function, view and trigger of the public schema (not from an
# extension), one block each, in name order.
definitions() {
    "$ESC_PG_BINDIR/psql" "$1" -At -X -q -v ON_ERROR_STOP=1 <<'SQL'
SELECT kind || ' ' || name || E'\n' || def || E'\n'
FROM (
    SELECT 'function' AS kind, p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS def
    FROM pg_proc p
    WHERE p.pronamespace = 'public'::regnamespace
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    UNION ALL
    SELECT 'view', c.oid::regclass::text, pg_get_viewdef(c.oid, true)
    FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
    UNION ALL
    SELECT 'trigger', t.tgname || ' ON ' || t.tgrelid::regclass::text, pg_get_triggerdef(t.oid, true)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
) o
ORDER BY kind, name;
SQL
}

# Drops every view and function of the public schema (their triggers go with
# the functions).
drop_all() {
    "$ESC_PG_BINDIR/psql" "$1" -At -X -q -v ON_ERROR_STOP=1 <<'SQL'
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS v FROM pg_class c
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v' LOOP
        EXECUTE format('DROP VIEW %s CASCADE', r.v);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = 'public'::regnamespace
               AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('DROP FUNCTION %s CASCADE', r.f);
    END LOOP;
END $$;
SQL
}

esc_step "private PostgreSQL: two databases, both migrated"
esc_pg_start
esc_psql "CREATE DATABASE current" >/dev/null
dsn_migrated=$ESCROW_DSN
dsn_current=${ESCROW_DSN/dbname=escrow/dbname=current}
esc_ctl --dsn "$dsn_migrated" migrate >"$work/migrate1" 2>&1 || { cat "$work/migrate1"; esc_fail "migrate"; }
esc_ctl --dsn "$dsn_current" migrate >"$work/migrate2" 2>&1 || { cat "$work/migrate2"; esc_fail "migrate"; }

esc_step "current/*.sql in place of what the migrations defined"
drop_all "$dsn_current"
[[ -z $(definitions "$dsn_current") ]] || esc_fail "objects left after dropping them: $(definitions "$dsn_current")"
files=("$current_dir"/*.sql)
[[ -e ${files[0]} ]] || esc_fail "no files in $current_dir"
for f in "${files[@]}"; do
    "$ESC_PG_BINDIR/psql" "$dsn_current" -X -q -v ON_ERROR_STOP=1 -f "$f" >"$work/apply" 2>&1 ||
        { cat "$work/apply"; esc_fail "$(basename "$f") does not apply to a migrated database"; }
done

esc_step "the same definitions"
definitions "$dsn_migrated" >"$work/migrated.txt"
definitions "$dsn_current" >"$work/current.txt"
[[ -s $work/migrated.txt ]] || esc_fail "the migrations define no function or view"
if ! diff -u "$work/migrated.txt" "$work/current.txt" >"$work/diff"; then
    cat "$work/diff" >&2
    esc_fail "common/schema/current/ differs from what the migrations define (- migrations, + current/)"
fi
for f in "${files[@]}"; do
    name=$(basename "$f" .sql)
    grep -Eq "^(function|view|trigger) (public\.)?$name([ (]|$)" "$work/migrated.txt" ||
        esc_fail "current/$name.sql is not named after an object it defines"
done
echo "$(grep -Ec '^(function|view|trigger) ' "$work/migrated.txt") objects, ${#files[@]} files: same definitions"
echo "PASS schema_current"
