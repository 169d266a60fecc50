/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.c - see daemon.h.
 */
#include "daemon.h"
#include "conn_guard.h"
#include "daemon_fds.h"

#include <inttypes.h>

#include <signal.h>
#include <stdio.h>

#include "clock.h"
#include "escrow_errors.h"
#include "log.h"
#include "metrics_process.h"

typedef struct daemon_run_state {
    const daemon_ops *ops;
    void *d;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t beat;
    bool started;     /* ops->start returned 0 */
    bool stopped_now; /* a second signal stopped the loop */
    health health;
} daemon_run_state;

/* static: reachable until exit, even after a failed start; the metrics
 * server's thread reads st.health */
static uv_loop_t loop;
static daemon_run_state st;

static int64_t mono_ms(void)
{
    return esc_mono_us() / 1000;
}

static void on_signal(uv_signal_t *s, int signum)
{
    const daemon_ops *o = st.ops;
    if (signum == SIGHUP) {
        /* numbered: two reloads within the log's repeat window are two lines */
        static uint64_t reloads;
        ESC_LOG(ESC_LOG_INFO, "DAEMON-RELOAD", "signal=%d reload=%" PRIu64 ": %s", signum,
                ++reloads,
                o->reload != NULL ? "reloading the configuration" : "nothing to reload; ignored");
        if (o->reload != NULL && st.started && !o->stopping(st.d)) {
            o->reload(st.d);
        }
        return;
    }
    if (o->stopping(st.d)) {
        ESC_LOG(ESC_LOG_WARN, o->stop_log_id, "signal=%d again: stopping now%s%s", signum,
                o->abort_note[0] != '\0' ? "; " : "", o->abort_note);
        st.stopped_now = true;
        uv_stop(s->loop);
        return;
    }
    ESC_LOG(ESC_LOG_INFO, o->stop_log_id, "signal=%d: %s", signum, o->stop_note);
    o->stop(st.d);
}

/* The beat: the loop turns; is the daemon ready; repeated log lines. */
static void on_beat(uv_timer_t *t)
{
    (void)t;
    health_beat(&st.health, mono_ms());
    conn_guard_tick(mono_ms());
    char why[HEALTH_WHY_LEN] = "";
    bool ready = false;
    if (st.ops->stopping(st.d)) {
        snprintf(why, sizeof why, "stopping");
    } else {
        ready = st.ops->ready == NULL || st.ops->ready(st.d, why, sizeof why);
    }
    health_set_ready(&st.health, ready, why);
    esc_log_flush_repeats();
}

/* Unreferenced: they never keep the loop alive on their own. */
static int handles_start(void)
{
    uv_signal_t *sigs[3] = {&st.sig_term, &st.sig_int, &st.sig_hup};
    int signums[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        if (uv_signal_init(&loop, sigs[i]) != 0) {
            return ESC_EIO;
        }
        uv_unref((uv_handle_t *)sigs[i]);
        if (uv_signal_start(sigs[i], on_signal, signums[i]) != 0) {
            return ESC_EIO;
        }
    }
    if (uv_timer_init(&loop, &st.beat) != 0) {
        return ESC_EIO;
    }
    uv_unref((uv_handle_t *)&st.beat);
    return uv_timer_start(&st.beat, on_beat, HEALTH_BEAT_MS, HEALTH_BEAT_MS) == 0 ? 0 : ESC_EIO;
}

static void handles_close(void)
{
    uv_close((uv_handle_t *)&st.sig_term, NULL);
    uv_close((uv_handle_t *)&st.sig_int, NULL);
    uv_close((uv_handle_t *)&st.sig_hup, NULL);
    uv_close((uv_handle_t *)&st.beat, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

int daemon_run(const daemon_ops *ops, void *d, const void *cfg)
{
    st.ops = ops;
    st.d = d;
    st.started = false;
    st.stopped_now = false;
    health_init(&st.health, mono_ms());
    signal(SIGPIPE, SIG_IGN);
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "%s: cannot create the event loop\n", ops->name);
        return 1;
    }
    (void)daemon_fds_raise(ops->name);
    if (handles_start() != 0 || ops->start(d, &loop, cfg) != 0) {
        ops->fini(d);
        return 1;
    }
    st.started = true;
    uv_run(&loop, UV_RUN_DEFAULT);
    int code = st.stopped_now ? 1 : ops->exit_code != NULL ? ops->exit_code(d) : 0;
    if (!st.stopped_now) {
        handles_close(); /* the daemon closed its handles: only ours are left */
    }
    ops->fini(d);
    esc_log_flush_repeats();
    if (uv_loop_close(&loop) != 0 && code == 0) {
        ESC_LOG(ESC_LOG_WARN, ops->stop_log_id, "loop closed with handles still open");
    }
    return code;
}

int daemon_drain(int sock, int max, bool (*go_on)(void *arg), daemon_msg_cb cb, void *arg)
{
    for (int i = 0; i < max && (go_on == NULL || go_on(arg)); i++) {
        void *msg;
        size_t len;
        nnx_hdr hdr;
        int rc = nnx_recv(sock, &msg, &len, &hdr);
        if (rc != 0 || msg == NULL) {
            return rc;
        }
        cb(arg, msg, len, &hdr);
        nnx_free(msg);
    }
    return 0;
}

int daemon_metrics_start(metrics_registry *reg, const char *addr, metrics_http **http,
                         const char *log_id)
{
    char why[256];
    int rc = metrics_process_register(reg);
    if (rc == 0 && conn_guard_on()) {
        rc = conn_guard_register(reg);
    }
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, log_id, "cannot register the process metrics");
        return rc;
    }
    rc = metrics_http_start_health(reg, st.ops != NULL ? &st.health : NULL, addr, http, why,
                                   sizeof why);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, log_id, "--metrics %s: %s", addr, why);
        return rc;
    }
    ESC_LOG(ESC_LOG_INFO, log_id, "serving Prometheus metrics on %s port=%u", addr,
            (unsigned)metrics_http_port(*http));
    return 0;
}
