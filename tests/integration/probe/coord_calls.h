/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_calls.h - coord_probe's client calls: what libescrow and escrowctl
 * ask escrow-coordinator, one request each, the answer printed as one line.
 *
 *   route URL TENANT (item=I | segment=S)
 *       prints: STATUS version=V sold_out=0|1 paused=0|1 tail=T
 *               segs=ID:EPOCH:STATE:ENDPOINT,...   (or STATUS msg=M)
 *   admin URL TENANT OP [item=I] [node=N] [qty=Q] [segments=S]
 *       OP: restock reduce pause resume split collapse rebalance retire drain
 *       undrain reload; sent once (not idempotent); prints: STATUS message
 *   sub PUB_URL TENANT ITEM SECONDS
 *       prints the first published route of ITEM:
 *       ROUTE version=V segs=N sold_out=B tail=T   (or NO_ROUTE)
 *
 * Each takes coord_probe's argv as it is (argv[1] the sub-command); exit
 * codes as coord_probe's.
 */
#ifndef ESC_COORD_CALLS_H
#define ESC_COORD_CALLS_H

int coord_calls_route(int argc, char **argv);
int coord_calls_admin(int argc, char **argv);
int coord_calls_sub(int argc, char **argv);

#endif
