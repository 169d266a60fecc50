/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_usage.c - see ctl_usage.h. The text is written in sections, in order,
 * one string each.
 */
#include "ctl_usage.h"

/* The synopsis. */
static void usage_synopsis(FILE *f)
{
    fputs("usage: escrowctl [--config FILE] [--dsn DSN] [--coordinator URL] [--timeout-ms MS] "
          "[--json]\n"
          "                 COMMAND [ARGS]\n"
          "\n",
          f);
}

/* The commands on the database. */
static void usage_db(FILE *f)
{
    fputs("from the database (--dsn):\n"
          "  migrate [--status]           apply the embedded schema migrations (idempotent);\n"
          "                               --status: the database's schema version against\n"
          "                               this release's, pending migrations (exit 1 if any)\n"
          "  item create TENANT ITEM --total N [--segments K] [--node NODE] [--region R]\n"
          "              [--max-per-order N] [--max-per-buyer N] [--hold-ttl-ms MS]\n"
          "                               create an item and its K segments; without --node\n"
          "                               they stay unassigned and the coordinator (if one is\n"
          "                               given) is asked to reload its catalog and place them\n"
          "  item import FILE [--format csv|jsonl] [--chunk N] [--region R]\n"
          "                               create many items: CSV with a header, or JSON lines\n"
          "                               (FILE - is stdin); columns tenant, item, total,\n"
          "                               segments, max_per_order, max_per_buyer, hold_ttl_ms\n"
          "                               (item create's values and defaults); the whole file\n"
          "                               is checked first: a bad line or an existing item with\n"
          "                               other values changes nothing; an identical one is\n"
          "                               unchanged (a re-run is a no-op); --chunk N rows a\n"
          "                               transaction (default 1000); a summary: created,\n"
          "                               unchanged, failed\n"
          "  status [TENANT [ITEM]] [--tenant T] [--item-prefix P] [--state S] [--paused]\n"
          "         [--sold-out] [--limit N] [--offset N]\n"
          "                               per item and per segment: owner, epoch, state,\n"
          "                               counters, transfers in flight, tail segment; --limit\n"
          "                               items a page (default 50, at most 1000), from\n"
          "                               --offset; the last line says how many more match\n"
          "  nodes                        nodes: endpoint, state, last seen, lease, segments\n"
          "  transfers [TENANT [ITEM]] [--all] [--limit N]\n"
          "                               open transfers (--all: ended ones too), newest first\n"
          "  holds TENANT --buyer B [--item I] [--limit N]\n"
          "  holds TENANT --hold HOLD_ID  list holds\n"
          "  release HOLD_ID              force-release a hold through the node that owns its\n"
          "                               segment (recorded as cancelled by an operator)\n"
          "  events TENANT [--item I] [--after EVENT_ID] [--limit N]\n"
          "                               list outbox events\n"
          "  events TENANT --follow --consumer NAME [--item I] [--from-start | --after ID]\n"
          "         [--limit N]           print events as they become final, in feed order,\n"
          "                               one line each (--json: JSON lines); commit the\n"
          "                               consumer's cursor after each printed batch (N events,\n"
          "                               default 100); a restart resumes after the cursor;\n"
          "                               --from-start/--after only place a NEW consumer;\n"
          "                               SIGINT/SIGTERM stop it (exit 0)\n"
          "  consumers TENANT             feed consumers: cursor, lag (events, seconds)\n"
          "  retention show               the day partitions of holds and outbox: rows, size,\n"
          "                               day, and what a retention run would drop and why\n"
          "  retention run                drop them now (whole partitions) and make the\n"
          "                               partitions ahead; then show what is left\n"
          "  restore fence                after a restore, before any daemon starts: move\n"
          "                               every segment's hold ids 2^32 on (refused while a\n"
          "                               coordinator leads this database)\n"
          "  restore xid-epoch            the transaction-id epoch a restore from pg_dump\n"
          "                               needs (pg_resetwal -e E); docs/backup.md\n"
          "  check                        conservation (transfers in flight included) and the\n"
          "                               counters against the holds; exit 1 if violated\n"
          "\n",
          f);
}

/* The commands the coordinator carries out. */
static void usage_coordinator(FILE *f)
{
    fputs("through the coordinator (--coordinator; no database needed):\n"
          "  item restock TENANT ITEM QTY   add QTY units\n"
          "  item reduce TENANT ITEM QTY    remove QTY units that are neither held nor sold\n"
          "  item pause TENANT ITEM         stop new reserves (holds go on)\n"
          "  item resume TENANT ITEM        take reserves again\n"
          "  item retire TENANT ITEM        stop selling for good\n"
          "  item split TENANT ITEM N       spread the item over N active segments\n"
          "  item collapse TENANT ITEM      move everything into one tail segment now\n"
          "  item rebalance TENANT ITEM     run a rebalancing pass for the item now\n"
          "  drain NODE                     hand NODE's segments to other nodes\n"
          "  undrain NODE                   let NODE take segments again\n"
          "\n",
          f);
}

/* The commands over several regions. */
static void usage_regions(FILE *f)
{
    fputs("over several regions (--config FILE once per region; no --dsn):\n"
          "  item create TENANT ITEM --global --total N [--quota R=N,R=N...] [create options]\n"
          "                               the item in every region's database, N split into\n"
          "                               quotas by each file's [quota] share (or --quota);\n"
          "                               re-running completes an interrupted create\n"
          "  quota show [TENANT [ITEM]]   per global item and region: quota, available, held,\n"
          "                               sold, unallocated, in flight out, floor; the sums\n"
          "  quota move TENANT ITEM QTY --from R --to R\n"
          "                               ask region R's coordinator to send QTY units of quota\n"
          "  item restock TENANT ITEM QTY --global [--region R] [--via V] [--op-id ID]\n"
          "                               add QTY units to a global item, once per ID (made up\n"
          "                               and printed if not given; a retry names the same ID\n"
          "                               and --via): into region R, else where demand or the\n"
          "                               [quota] shares say; carried out by the item's first\n"
          "                               region, or V\n"
          "  item reduce TENANT ITEM QTY --global [--via V] [--op-id ID]\n"
          "                               remove QTY units, never a sold or held one: unused\n"
          "                               quota first, the least busy region first, held units\n"
          "                               as they come back; refused if fewer are unsold\n"
          "  regions                      each region: database, region_self, coordinator\n"
          "                               (answers?), peers, quota transfers and receipts\n"
          "  status --global [TENANT [ITEM]]  each region's status, then the global items\n"
          "  check --global               each region's check, then per global item: quotas +\n"
          "                               units in flight = global_total (exit 1 if violated,\n"
          "                               2 if a region it needs has no --config)\n"
          "\n",
          f);
}

/* The options. */
static void usage_options(FILE *f)
{
    fputs("  --config FILE      the region's INI file (examples/regions/eu.ini): the dsn\n"
          "                     and the coordinator from its [region] section, unless\n"
          "                     --dsn / --coordinator are given (the environment is then\n"
          "                     not consulted)\n"
          "  --dsn DSN          PostgreSQL connection string (default: $ESCROW_DSN)\n"
          "  --coordinator URL  the coordinator's request endpoint, e.g. tcp://127.0.0.1:7000\n"
          "                     (default: $ESCROW_COORDINATOR); a region with a standby\n"
          "                     coordinator: both, comma-separated (the leader answers)\n"
          "  --timeout-ms MS    how long to wait for the coordinator or node (10..60000)\n"
          "  --json             machine-readable output; the coordinator's commands print\n"
          "                     {\"status\":..., \"message\":...}\n"
          "  --help             this text\n"
          "\n",
          f);
}

/* Defaults and exit codes. */
static void usage_exit(FILE *f)
{
    fputs("defaults: --segments 1, --region local, --hold-ttl-ms 600000, --timeout-ms 3000,\n"
          "          --max-per-order 0 and --max-per-buyer 0 (no limit), --limit 100\n"
          "exit: 0 ok\n"
          "      1 failed: refused by the coordinator or node, not found, or check found a "
          "violation\n"
          "      2 usage or database connection error (nothing was done)\n"
          "      3 no answer: the coordinator or the hold's node did not answer in time or is\n"
          "        down (nothing was done if nothing could be sent; otherwise look before\n"
          "        retrying a restock or reduce)\n",
          f);
}

void ctl_usage(FILE *f)
{
    usage_synopsis(f);
    usage_db(f);
    usage_coordinator(f);
    usage_regions(f);
    usage_options(f);
    usage_exit(f);
}
