/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_race.h - esc_probe's races: calls that meet at the node at once,
 * where exactly one outcome may win.
 *
 *   same-key --item I --key K --n N     N reserves with one key in flight:
 *                                       every reply OK with the same hold
 *   cr-race --item I --prefix P --n N   per hold a confirm and a release in
 *                                       flight: exactly one wins
 *   rx-race ... --ttl-ms MS --per-hold K   K releases fired around each
 *                                       hold's expiry: all agree
 */
#ifndef ESC_PROBE_RACE_H
#define ESC_PROBE_RACE_H

#include "probe_args.h"

int probe_same_key(const probe_args *args);
int probe_cr_race(const probe_args *args);
int probe_rx_race(const probe_args *args);

#endif
