/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_auth.h - the coordinator's credential check (coord_auth.c).
 */
#ifndef ESC_COORD_AUTH_H
#define ESC_COORD_AUTH_H

#include "auth_guard.h"
#include "wire.h"

typedef struct coord coord;

/* Starts c->auth (allocated here) per c->cfg.auth and c->cfg.cluster_key.
 * Returns 0 or an ESC_E* code. */
int coord_auth_start(coord *c);
/* The wire_check_fn for every request (arg: the coord). */
int coord_auth_check(const wire_head *h, char why[WIRE_WHY_MAX], void *arg);
/* A reload (SIGHUP): the cluster keys (key is sent to peers and accepted,
 * prev, NULL = none, accepted too; texts borrowed for the call) and the
 * credentials table read again now. Returns 0 or ESC_ECONFIG (a key not
 * well formed: the keys did not change). */
int coord_auth_reload(coord *c, const char *key, const char *prev);
/* Closes its handles; c->handles_open counts them until they closed. */
void coord_auth_close(coord *c);
/* After the loop ended. */
void coord_auth_free(coord *c);

#endif
