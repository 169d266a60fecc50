/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_periodic.c - see coord_periodic.h.
 */
#include "coord_periodic.h"

#include "coord_state.h"
#include "escrow_errors.h"

static void on_timer(uv_timer_t *t)
{
    coord_periodic *p = t->data;
    if (p->busy || p->closing) {
        return;
    }
    if (!pgx_ready(&p->db)) {
        pgx_reconnect(&p->db); /* no-op unless it is down */
        return;
    }
    p->busy = p->tick(p);
}

static void on_db_state(pgx_conn *pc, bool up, void *arg)
{
    (void)pc;
    coord_periodic *p = arg;
    if (!up) {
        p->busy = false; /* the statement in flight was failed already */
    }
    if (p->db_state != NULL && !p->closing) {
        p->db_state(p, up);
    }
}

int coord_periodic_start(coord *c, coord_periodic *p, const char *name, uint64_t first_ms,
                         uint64_t period_ms)
{
    p->c = c;
    int rc = pgx_open(c->loop, &p->db, c->cfg.dsn, name, NULL, NULL, 0, on_db_state, p);
    if (rc != 0) {
        return rc;
    }
    if (uv_timer_init(c->loop, &p->timer) != 0) {
        return ESC_EIO;
    }
    c->handles_open++;
    p->timer.data = p;
    if (uv_timer_start(&p->timer, on_timer, first_ms, period_ms) != 0) {
        return ESC_EIO;
    }
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    coord_periodic *p = h->data;
    p->c->handles_open--;
}

static void on_db_closed(uv_handle_t *h)
{
    coord_periodic *p = ((pgx_conn *)h->data)->state_arg;
    p->c->handles_open--;
}

void coord_periodic_close(coord_periodic *p)
{
    if (p->c == NULL || p->closing) {
        return;
    }
    p->closing = true;
    if (p->timer.loop != NULL && !uv_is_closing((uv_handle_t *)&p->timer)) {
        uv_close((uv_handle_t *)&p->timer, on_timer_closed); /* initialised by start */
    }
    p->c->handles_open++;
    if (!pgx_close(&p->db, on_db_closed)) {
        p->c->handles_open--;
    }
}
