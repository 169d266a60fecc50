/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_leader.c - see coord_leader.h.
 */
#include "coord_leader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "coord.h"
#include "coord_db.h"
#include "escrow_errors.h"
#include "failpoint.h"
#include "log.h"

#define TAG "/* escrow:coord-leader */ "

/* Takes the lease when it expired (or is this coordinator's own), bumps the
 * epoch and sets the session's; returns the new epoch (NULL: not taken) and
 * the holder and epoch the row had before. */
static const char sql_acquire[] =
    TAG "WITH u AS (UPDATE coord_leader SET epoch = epoch + 1, holder = $1, "
        "since = clock_timestamp(), "
        "expires_at = clock_timestamp() + $2::integer * interval '1 millisecond' "
        "WHERE expires_at < clock_timestamp() OR holder = $1 "
        "RETURNING epoch, set_config('escrow.coord_epoch', epoch::text, false)) "
        "SELECT (SELECT epoch FROM u), holder, epoch FROM coord_leader";
static const char sql_renew[] =
    TAG "UPDATE coord_leader SET expires_at = clock_timestamp() + $2::integer * "
        "interval '1 millisecond' WHERE epoch = $1 RETURNING epoch";
static const char sql_session[] = TAG "SELECT set_config('escrow.coord_epoch', $1, false)";

static uint32_t period_ms(const coord *c)
{
    uint32_t p = c->cfg.leader_lease_ms / 4;
    return p > 50 ? p : 50;
}

static void on_stop_timer(uv_timer_t *t)
{
    coord_stop(t->data);
}

/* Another coordinator leads: answer nothing more, stop with status 3. */
static void depose(coord *c, const char *why)
{
    coord_lead *l = &c->lead;
    if (l->deposed) {
        return;
    }
    l->deposed = true;
    ESC_LOG(ESC_LOG_ERROR, "COORD-DEPOSED",
            "another coordinator leads; this one (epoch %" PRIu64 ") stops: %s", l->epoch, why);
    if (c->leading_started) {
        nnx_watch_pause(&c->watch);
    }
    c->exit_code = COORD_EXIT_DEPOSED;
    (void)uv_timer_start(&l->timer, on_stop_timer, 0, 0); /* not from inside the callback */
}

static void on_renewed(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)arg;
    coord_lead *l = &c->lead;
    l->busy = false;
    if (err->code != 0 || c->stopping) {
        return; /* retried on the next period; serving stops when the lease runs out */
    }
    if (PQntuples(res) != 1) {
        if (failpoint_coord_ignore_lease()) {
            ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                    "ESC_FAILPOINT_COORD_IGNORE_LEASE: the lease has another epoch; serving on");
            return;
        }
        depose(c, "the lease has another epoch");
        return;
    }
    l->valid_until_us = l->sent_us + (int64_t)c->cfg.leader_lease_ms * 1000;
    if (l->lapsed) {
        l->lapsed = false;
        ESC_LOG(ESC_LOG_WARN, "COORD-LEASE",
                "renewed after it ran out: serving again (epoch %" PRIu64 ")", l->epoch);
        (void)nnx_watch_resume(&c->watch);
    }
}

static void renew(coord *c)
{
    coord_lead *l = &c->lead;
    char e[24], ms[16];
    snprintf(e, sizeof e, "%" PRIu64, l->epoch);
    snprintf(ms, sizeof ms, "%u", c->cfg.leader_lease_ms);
    const char *v[2] = {e, ms};
    l->sent_us = esc_mono_us();
    if (coord_db_push_front(c, sql_renew, 2, v, on_renewed, NULL) == 0) {
        l->busy = true;
    }
}

static void on_acquired(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)arg;
    coord_lead *l = &c->lead;
    l->busy = false;
    if (err->code != 0 || c->stopping || PQntuples(res) != 1) {
        return;
    }
    if (PQgetisnull(res, 0, 0)) {
        if (!l->standby_noted) {
            l->standby_noted = true;
            ESC_LOG(ESC_LOG_INFO, "COORD-STANDBY",
                    "standing by: %s leads (epoch %s); taking over when its lease of %u ms "
                    "runs out",
                    PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), c->cfg.leader_lease_ms);
        }
        return;
    }
    l->epoch = (uint64_t)strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    l->valid_until_us = l->sent_us + (int64_t)c->cfg.leader_lease_ms * 1000;
    const char *before = PQgetvalue(res, 0, 1);
    ESC_LOG(ESC_LOG_INFO, "COORD-LEADER",
            "leading: epoch=%" PRIu64 " id=%s previous=%s waited_ms=%" PRId64, l->epoch, l->id,
            before[0] ? before : "(none)", (esc_mono_us() - l->standby_since_us) / 1000);
    l->lead_cb(c);
}

static void acquire(coord *c)
{
    coord_lead *l = &c->lead;
    char ms[16];
    snprintf(ms, sizeof ms, "%u", c->cfg.leader_lease_ms);
    const char *v[2] = {l->id, ms};
    l->sent_us = esc_mono_us();
    if (coord_db_push_front(c, sql_acquire, 2, v, on_acquired, NULL) == 0) {
        l->busy = true;
    }
}

static void on_timer(uv_timer_t *t)
{
    coord *c = t->data;
    coord_lead *l = &c->lead;
    if (l->busy || l->deposed || c->stopping) {
        return;
    }
    if (l->epoch == 0) {
        acquire(c);
    } else {
        renew(c);
    }
}

int coord_leader_start(coord *c, void (*lead_cb)(coord *c))
{
    coord_lead *l = &c->lead;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) {
        snprintf(host, sizeof host, "localhost");
    }
    snprintf(l->id, sizeof l->id, "%s/%s", host, c->cfg.nlisten > 0 ? c->cfg.listen[0] : "");
    l->lead_cb = lead_cb;
    l->standby_since_us = esc_mono_us();
    if (uv_timer_init(c->loop, &l->timer) != 0) {
        return ESC_EIO;
    }
    c->handles_open++;
    l->timer.data = c;
    if (uv_timer_start(&l->timer, on_timer, 0, period_ms(c)) != 0) {
        return ESC_EIO;
    }
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    coord *c = h->data;
    c->handles_open--;
}

void coord_leader_close(coord *c)
{
    uv_timer_t *t = &c->lead.timer;
    if (t->loop != NULL && !uv_is_closing((uv_handle_t *)t)) {
        uv_close((uv_handle_t *)t, on_timer_closed);
    }
}

bool coord_leader_leads(const coord *c)
{
    return c->lead.epoch != 0 && !c->lead.deposed;
}

bool coord_leader_serving(coord *c)
{
    coord_lead *l = &c->lead;
    if (!coord_leader_leads(c) || c->stopping) {
        return false;
    }
    if (esc_mono_us() < l->valid_until_us || failpoint_coord_ignore_lease()) {
        return true;
    }
    if (!l->lapsed) {
        l->lapsed = true;
        ESC_LOG(ESC_LOG_WARN, "COORD-LEASE",
                "the leader lease ran out by this coordinator's clock (epoch %" PRIu64
                "): serving paused until it is renewed",
                l->epoch);
        nnx_watch_pause(&c->watch);
    }
    if (!l->busy) {
        renew(c);
    }
    return false;
}

/* A failed setting fails its session: the next one sets it again. */
static void on_session_set(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    (void)res;
    (void)err;
    (void)arg;
}

void coord_leader_session(coord *c)
{
    char e[24] = "-1";
    if (coord_leader_leads(c)) {
        snprintf(e, sizeof e, "%" PRIu64, c->lead.epoch);
    }
    const char *v[1] = {e};
    (void)coord_db_push_front(c, sql_session, 1, v, on_session_set, NULL);
}

void coord_leader_refused(coord *c, const char *why)
{
    depose(c, why);
}
