/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_node.h - coord_probe's fake node: heartbeats to escrow-coordinator
 * as a segment node would send them, with figures given on the command
 * line, and the coordinator's answers printed (coordinator.sh).
 *
 *   hb URL NODE INCARNATION NODE_ENDPOINT [k=v ...]
 *       one heartbeat; k=v: stats=ID:EPOCH:AVAIL:HELD:SOLD:RESERVED:EMPTIES,...
 *       results=ID:OUTCOME:QTY,...  dry=ID,...  stopping=1
 *       prints: STATUS lease_ms=L heartbeat_ms=H segs=ID:EPOCH:STATE:PAUSED,...
 *               xfers=ID:KIND:SEG:QTY,... msg=M   (segs sorted by id, "-" if none)
 *   hb-loop URL NODE INCARNATION NODE_ENDPOINT EVERY_MS OUT_FILE STOP_FILE
 *       heartbeats every EVERY_MS until STOP_FILE exists; writes the latest
 *       "segs=... xfers=..." line to OUT_FILE (rewritten when it changes)
 *
 * Both take coord_probe's argv as it is (argv[1] the sub-command); exit
 * codes as coord_probe's.
 */
#ifndef ESC_FAKE_NODE_H
#define ESC_FAKE_NODE_H

int fake_node_hb(int argc, char **argv);
int fake_node_hb_loop(int argc, char **argv);

#endif
