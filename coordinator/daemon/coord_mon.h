/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_mon.h - the coordinator's invariant monitor.
 *
 * Every --check-ms the coordinator runs the conservation check on a libpq
 * connection of its own (so a slow check never holds up placement's
 * statement queue, coord_db.c), asynchronously on the loop, over some of
 * the catalog's items:
 *   - the items whose books may have moved since the last check: marked on
 *     the catalog's COORD_WORK_MONITOR list (coord_dirty.h) with every
 *     COORD_WORK_POLICY mark (a node reported other figures for one of its
 *     segments, the catalog read other counters, a transfer opened or
 *     closed, a segment or its owner changed: coord_cat_touch);
 *   - the items its last checks found violating, every time, until a check
 *     finds they hold again;
 *   - a round-robin slice of the rest, so that every item the coordinator
 *     holds is checked at least once every --check-sweep-ms (default
 *     300000; at most one check period more): a violation nobody marked
 *     (a row changed by hand) is found within that bound; the slice is at
 *     least COORD_MON_SLICE_MIN items (a small catalog goes round sooner);
 * at most COORD_MON_BATCH_MAX items per check (the rest stay marked for
 * the next). Idle, a check costs PostgreSQL the slice, not the catalog.
 * The items are those of the coordinator's catalog: an item it has not
 * read yet is checked once it has (a new item is marked); escrowctl check
 * reads every row.
 * For those items:
 *   - items: the `conservation` view (segments' available + held + sold,
 *     units of 'sent' transfers in flight, unallocated = total; held + sold
 *     <= total) and a negative unallocated;
 *   - segments: the `segment_holds_agree_recent` view (counters equal the
 *     holds behind them; the days that can no longer change are read from
 *     their per-segment sums, holds_closed) and negative counters.
 * Both in ONE statement, hence one snapshot: a batch or transfer that
 * commits between two parts cannot produce a false alarm. The statement
 * adds up the views' terms for the checked items only (the views aggregate
 * every row); escrowctl check still reads the views whole.
 *
 * What is reported is the state of every item as of its last check:
 * violations = the items (and segments) whose last check failed, which the
 * monitor checks again every time. items and segments (monitor table,
 * escrowctl status) are the catalog's count(*), taken once per round of
 * the sweep and whenever the coordinator's catalog grew or shrank.
 *
 * The result is
 *   - exported (when --metrics is on): escrow_conservation_ok (1/0),
 *     escrow_conservation_violations (items violating),
 *     escrow_conservation_segment_violations (segments disagreeing with
 *     their holds), escrow_conservation_divergence_units{tenant,item}
 *     (total minus accounted, per violating item, only with
 *     --metrics-labels on: it names the tenant and the item; at most
 *     COORD_MON_ITEMS_MAX), escrow_conservation_last_check_timestamp_seconds
 *     and escrow_conservation_checks_total{result="ok|violated|failed"};
 *     the gauges appear after the first check completed;
 *   - logged: a WARN line COORD-INVARIANT per violating item or segment (at
 *     most COORD_MON_LOG_MAX per check), an INFO line when it holds again;
 *   - written to the `monitor` table (migration 0005) with the check period,
 *     so `escrowctl status` shows it, and shows it as stale when the
 *     coordinator stopped checking.
 * A check starts only when the previous one finished; a check that fails
 * (connection lost) is counted and retried at the next period.
 *
 * Cost: segment_holds_agree_recent aggregates the holds of the days not
 * closed yet (today, yesterday until retention ran after 01:00 UTC, a day
 * with a live hold left, holds_default)
 * per segment; the closed days' partitions are pruned. Retention
 * (coord_ret.h, escrow_holds_close) closes the days, so with retention
 * running the check's cost follows a day of holds, not the history.
 * With retention off nothing is closed and every hold is read.
 */
#ifndef ESC_COORD_MON_H
#define ESC_COORD_MON_H

#include <stdint.h>

typedef struct coord coord;
typedef struct coord_mon coord_mon;

/* Default and bounds of --check-ms. */
#define COORD_MON_CHECK_MS_DEFAULT 5000
#define COORD_MON_CHECK_MS_MIN 50
#define COORD_MON_CHECK_MS_MAX 3600000
/* Default and bounds of --check-sweep-ms: every item is checked at least
 * this often (at most --check-ms more); at or below --check-ms every check
 * looks at every item. */
#define COORD_MON_SWEEP_MS_DEFAULT 300000
#define COORD_MON_SWEEP_MS_MIN 50
#define COORD_MON_SWEEP_MS_MAX 86400000
/* Items of the round robin per check, at least (a few ms of PostgreSQL). */
#define COORD_MON_SLICE_MIN 256
/* Items one check looks at, at most (the first check after a start spreads
 * the whole catalog over several). */
#define COORD_MON_BATCH_MAX 10000
/* Violating items exported per check (escrow_conservation_divergence_units). */
#define COORD_MON_ITEMS_MAX 256
/* WARN lines per check, and violations written to monitor.detail. */
#define COORD_MON_LOG_MAX 10

/* Starts the monitor on c's loop (its connection and timer). Returns 0 or
 * an ESC_E* code. */
int coord_mon_start(coord *c);
/* Closes the timer and the connection (from coord_stop). */
void coord_mon_close(coord *c);
/* Frees it, after uv_run returned. NULL-safe. */
void coord_mon_free(coord *c);

#endif
