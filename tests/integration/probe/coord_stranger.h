/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_stranger.h - coord_probe's subscriber to the coordinator's routing
 * feed (PUB socket) that subscribes to everything, as a stranger on the
 * network would, and counts what it could read:
 *
 *   stranger PUB_URL SECONDS KEY ITEM
 *       KEY: a key's text whose sealed updates it opens (auth_route.h), or
 *       "-" for none; ITEM: an item id to look for. Prints one line:
 *       STRANGER msgs=N clear=C sealed=S opened=O opened_item=I leaks=L
 *       msgs     messages received in SECONDS
 *       clear    messages that decode as a readable route (any tenant)
 *       sealed   messages sealed for some key (start with the seal's mark)
 *       opened   sealed messages KEY opens
 *       opened_item  of those, routes of ITEM
 *       leaks    messages whose bytes contain ITEM's id
 *
 * Exit 0 when at least one message arrived, 1 otherwise, 2 on bad usage.
 */
#ifndef ESC_COORD_STRANGER_H
#define ESC_COORD_STRANGER_H

int coord_stranger_run(int argc, char **argv);

#endif
