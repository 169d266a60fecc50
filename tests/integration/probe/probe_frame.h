/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_frame.h - esc_probe's one-frame sub-commands: one request built by
 * hand (any operation, any tenant, the process's credential: esc_probe
 * --credential) to a node or a coordinator, its answer printed as one line.
 * For the tenant matrix (tenants.sh) and the managed node (managed.sh).
 *
 *   frame --op OP [--item I --key K --hold ID --qty Q --node N --n N]
 *       OP: reserve confirm release extend get stats route op-release
 *       resolve, admin-restock ... admin-reload, quota-move quota-status,
 *       heartbeat. Prints
 *         <STATUS> hold=<id> nsegs=<n> route=<0|1> msg=<message, spaces as _>
 *       or TIMEDOUT; with --n > 1 sends n copies one after the other and
 *       prints "COUNTS n= ok= busy= other= none= busy_msg=" (rate limits).
 *   hint-reserve --item I --key K [--buyer B] [--qty Q] [--segment S]
 *                [--attempt N] [--resolve]
 *       one reserve with a segment hint (libescrow's single-node mode sends
 *       none), the client's attempt number, or a resolve instead
 *   op-release --hold H
 *       ReleaseReq with by_operator set, as escrowctl release sends it
 *   Both print "<STATUS> hold=.. seg=.. state=.. qty=.. msg=..".
 */
#ifndef ESC_PROBE_FRAME_H
#define ESC_PROBE_FRAME_H

#include "probe_args.h"

int probe_frame(const probe_args *args);
int probe_hint_reserve(const probe_args *args);
int probe_op_release(const probe_args *args);

#endif
