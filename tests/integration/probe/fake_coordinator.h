/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_coordinator.h - esc_probe fake-coord: a fake coordinator for testing
 * a segment node in managed mode without the real one (managed.sh).
 *
 *   fake-coord --endpoint URL --in SPEC --out LOG (--stop-file F | --seconds S)
 *
 * It binds URL and answers heartbeats only. SPEC is read again for every
 * heartbeat, so a test script steers it by rewriting the file:
 *     hb_ms MS                                 heartbeat period to hand out
 *     assign NODE SEGMENT EPOCH STATE PAUSED   (STATE 0 active, 1 draining)
 *     xfer NODE TRANSFER_ID give|receive SEGMENT QTY
 *     silent NODE                              do not answer NODE's heartbeats
 * Ownership in PostgreSQL is the script's job (it raises the epochs itself,
 * as the coordinator would, before it writes an assignment). Every
 * heartbeat is logged as one line in LOG:
 *     HB node=N corr=C inc=I stopping=0|1 endpoint=E
 *        segs=ID:EPOCH:AVAIL:HELD:SOLD:STATE:RESERVED:EMPTIES,...
 *        xfers=ID:OUTCOME:QTY,... dry=ID,...
 * and every undecodable request as "BAD <STATUS> <why>".
 */
#ifndef ESC_FAKE_COORDINATOR_H
#define ESC_FAKE_COORDINATOR_H

#include "probe_args.h"

/* Runs until the stop file exists or the seconds have passed; esc_probe's
 * exit code. */
int fake_coordinator_run(const probe_args *args);

#endif
