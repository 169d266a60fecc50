/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_mon.h - the coordinator's invariant monitor.
 *
 * Every --check-ms the coordinator runs the conservation check on a libpq
 * connection of its own (so a slow check never holds up placement's
 * statement queue, coord_db.c), asynchronously on the loop:
 *   - items: the `conservation` view (segments' available + held + sold,
 *     units of 'sent' transfers in flight, unallocated = total; held + sold
 *     <= total) and a negative unallocated;
 *   - segments: the `segment_holds_agree_recent` view (counters equal the
 *     holds behind them; the days that can no longer change are read from
 *     their per-segment sums, holds_closed) and negative counters.
 * Both in ONE statement, hence one snapshot: a batch or transfer that
 * commits between two parts cannot produce a false alarm.
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
/* Violating items (and segments) read per check; the counts stay exact. */
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
