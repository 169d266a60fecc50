/*
 * daemon.c - see daemon.h.
 */
#include "daemon.h"
#include "daemon_fds.h"

#include <stdio.h>

#include "escrow_errors.h"
#include "log.h"

typedef struct daemon_run_state {
    const daemon_ops *ops;
    void *d;
    uv_signal_t sig_term, sig_int;
    bool stopped_now; /* a second signal stopped the loop */
} daemon_run_state;

static void on_signal(uv_signal_t *s, int signum)
{
    daemon_run_state *st = s->data;
    const daemon_ops *o = st->ops;
    if (o->stopping(st->d)) {
        ESC_LOG(ESC_LOG_WARN, o->stop_log_id, "signal=%d again: stopping now%s%s", signum,
                o->abort_note[0] != '\0' ? "; " : "", o->abort_note);
        st->stopped_now = true;
        uv_stop(s->loop);
        return;
    }
    ESC_LOG(ESC_LOG_INFO, o->stop_log_id, "signal=%d: %s", signum, o->stop_note);
    o->stop(st->d);
}

/* Unreferenced: they never keep the loop alive on their own. */
static int signals_start(daemon_run_state *st, uv_loop_t *loop)
{
    uv_signal_t *sigs[2] = {&st->sig_term, &st->sig_int};
    int signums[2] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        if (uv_signal_init(loop, sigs[i]) != 0) {
            return ESC_EIO;
        }
        sigs[i]->data = st;
        uv_unref((uv_handle_t *)sigs[i]);
        if (uv_signal_start(sigs[i], on_signal, signums[i]) != 0) {
            return ESC_EIO;
        }
    }
    return 0;
}

int daemon_run(const daemon_ops *ops, void *d, const void *cfg)
{
    /* static: reachable until exit, even after a failed start */
    static uv_loop_t loop;
    static daemon_run_state st;
    st.ops = ops;
    st.d = d;
    st.stopped_now = false;
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "%s: cannot create the event loop\n", ops->name);
        return 1;
    }
    (void)daemon_fds_raise(ops->name);
    if (signals_start(&st, &loop) != 0 || ops->start(d, &loop, cfg) != 0) {
        ops->fini(d);
        return 1;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    int code = st.stopped_now ? 1 : ops->exit_code != NULL ? ops->exit_code(d) : 0;
    if (!st.stopped_now) {
        /* the daemon closed its handles: only ours are left */
        uv_close((uv_handle_t *)&st.sig_term, NULL);
        uv_close((uv_handle_t *)&st.sig_int, NULL);
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    ops->fini(d);
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
    int rc = metrics_http_start(reg, addr, http, why, sizeof why);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, log_id, "--metrics %s: %s", addr, why);
        return rc;
    }
    ESC_LOG(ESC_LOG_INFO, log_id, "serving Prometheus metrics on %s port=%u", addr,
            (unsigned)metrics_http_port(*http));
    return 0;
}
