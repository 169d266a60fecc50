/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon.h - the skeleton every escrow daemon shares, so that each main
 * only parses its command line and hands its object over:
 *
 *   daemon_run          one libuv loop, run to its end: the daemon starts
 *                       on it, runs until it closed every handle it had
 *                       (a clean stop) or until a second signal, and is
 *                       freed; the exit status follows from how it ended
 *   signals             SIGINT and SIGTERM: the first asks the daemon to
 *                       stop cleanly (it finishes what is in flight), a
 *                       second stops the loop at once (status 1). SIGHUP
 *                       asks it to reload its configuration (ops->reload)
 *                       and never stops it; SIGPIPE is ignored (a peer
 *                       that went away is an error on that socket only)
 *   health              a timer beats every HEALTH_BEAT_MS: the loop is
 *                       turning (/healthz); at each beat the daemon says
 *                       whether it is ready (/readyz, ops->ready), and the
 *                       log writes the counts of repeated lines it held
 *                       back (log.h)
 *   daemon_drain        the bounded read of a nanomsg socket a poll
 *                       callback does (nnx.h: NN_RCVFD stays readable while
 *                       messages are queued, so a reader takes at most a
 *                       few per callback and lets the loop turn)
 *   daemon_metrics_start the Prometheus endpoint of --metrics, logged,
 *                       with the build and process metrics
 *                       (metrics_process.h) and the two health endpoints
 *
 * The daemon is passed as a void pointer with a table of its operations
 * (daemon_ops); the skeleton owns the loop and the signal handles. Signal
 * handles do not keep the loop alive: the loop ends when the daemon has
 * closed its own handles.
 */
#ifndef ESC_DAEMON_H
#define ESC_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "health.h"
#include "metrics.h"
#include "metrics_http.h"
#include "nnx.h"

typedef struct daemon_ops {
    const char *name;        /* the binary's, for messages on stderr: "escrow-segment" */
    const char *stop_log_id; /* message id of the signal lines: "SEG-STOP" */
    const char *stop_note;   /* logged at the first signal: what a clean stop does */
    const char *abort_note;  /* logged at a second: what stopping now leaves undone, or "" */
    /* Opens everything on loop. Returns 0, or an ESC_E* code after logging
     * why; daemon_run then calls fini and returns 1. */
    int (*start)(void *d, uv_loop_t *loop, const void *cfg);
    /* Begins a clean stop; the daemon closes its handles when done. */
    void (*stop)(void *d);
    /* True once a stop began (for any reason). */
    bool (*stopping)(const void *d);
    /* Frees what start allocated, after the loop ended (also after a
     * failed start). */
    void (*fini)(void *d);
    /* The status after the loop ended by itself (read before fini);
     * NULL: 0. */
    int (*exit_code)(const void *d);
    /* SIGHUP: re-read the configuration, apply what can change while
     * running, log what changed and what needs a restart. NULL: SIGHUP is
     * logged and ignored. Never stops the daemon. */
    void (*reload)(void *d);
    /* At every beat: true when the daemon can do its work, else false with
     * the reason in why (cap bytes). NULL: ready once started. */
    bool (*ready)(const void *d, char *why, size_t cap);
} daemon_ops;

/* Runs daemon d with cfg (borrowed, passed to start) on a loop of its own.
 * Returns the process exit status: 1 when the loop could not be made,
 * start failed, or a second signal stopped it; else ops->exit_code's (0
 * after a clean stop). */
int daemon_run(const daemon_ops *ops, void *d, const void *cfg);

/* Called by daemon_drain for each message: msg (len bytes, borrowed: freed
 * after the call) arrived with header hdr. */
typedef void (*daemon_msg_cb)(void *arg, const void *msg, size_t len, const nnx_hdr *hdr);

/* Receives from sock without blocking: up to max messages, each handed to
 * cb, while go_on(arg) (NULL: always) says so before each. Returns 0 when
 * nothing more is queued, max were read or go_on said no, else the
 * nnx_recv error (ESC_EIO or ESC_ETOOBIG) for the caller to log. */
int daemon_drain(int sock, int max, bool (*go_on)(void *arg), daemon_msg_cb cb, void *arg);

/* Serves reg over HTTP at addr (--metrics; metrics_http.h) and logs where,
 * under log_id; logs the reason on failure. Adds the build and process
 * metrics to reg and serves /healthz and /readyz from the daemon's health
 * (when called inside daemon_run). Returns 0 and *http (owned by the
 * caller, stopped with metrics_http_stop), or an ESC_E* code. */
int daemon_metrics_start(metrics_registry *reg, const char *addr, metrics_http **http,
                         const char *log_id);

#endif
