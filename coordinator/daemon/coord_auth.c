/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_auth.c - the coordinator's credential check (auth_guard.h): every
 * request on its REP socket goes through coord_auth_check before it is
 * decoded. Route requests need the tenant's signature (or an admin key's),
 * admin requests and quota moves an admin key's, heartbeats and quota
 * status/offers from peer coordinators the cluster key's. With --auth off nothing is
 * checked and nothing is opened.
 */
#include "coord_auth.h"

#include <stdlib.h>

#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"

int coord_auth_start(coord *c)
{
    c->auth = esc_xcalloc(1, sizeof *c->auth);
    auth_guard_config ac = {.on = c->cfg.auth,
                            .dsn = c->cfg.dsn,
                            .cluster_key = c->cfg.cluster_key,
                            .cluster_key_prev = c->cfg.cluster_key_prev,
                            .window_ms = c->cfg.auth_window_ms,
                            .name = "coordinator"};
    return auth_guard_start(c->auth, c->loop, &ac);
}

int coord_auth_check(const wire_head *h, char why[WIRE_WHY_MAX], void *arg)
{
    coord *c = arg;
    return auth_guard_check(c->auth, (int)h->access, h->tenant_id, &h->sig, why, WIRE_WHY_MAX);
}

int coord_auth_reload(coord *c, const char *key, const char *prev)
{
    int rc = auth_guard_set_cluster(c->auth, key, prev);
    if (rc == 0) {
        (void)wire_set_credential(key); /* quota messages to peers carry it */
    }
    auth_guard_reload_now(c->auth);
    return rc;
}

static void on_closed(void *arg)
{
    coord *c = arg;
    c->handles_open--;
}

void coord_auth_close(coord *c)
{
    if (c->auth != NULL && auth_guard_close(c->auth, on_closed, c)) {
        c->handles_open++;
    }
}

void coord_auth_free(coord *c)
{
    if (c->auth != NULL) {
        auth_guard_fini(c->auth);
        free(c->auth);
        c->auth = NULL;
    }
}
