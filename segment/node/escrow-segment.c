/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow-segment.c - the escrow-segment daemon's main: reads its settings
 * (node_settings.h: the command line, the config file, the region file,
 * the environment), checks them, and hands a node to the daemon skeleton
 * (daemon.h), which runs it on a libuv loop until a clean stop. SIGHUP
 * reads the files again and applies what a running node can take.
 * Exit codes: 0 clean stop, 1 failure (a schema it does not run on too),
 * 2 bad usage or configuration, 99 a failpoint fired (failpoint.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn_guard.h"
#include "clock.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "failpoint.h"
#include "log.h"
#include "node.h"
#include "node_net.h"
#include "node_settings.h"
#include "wire.h"

/* The command line as parsed at start, and the settings the node runs
 * with (the node borrows their strings until exit). */
static node_settings argv_only, running;

/* A random number per process start: a restarted node is a new incarnation
 * and never inherits the epochs its previous process was granted. */
static uint64_t new_incarnation(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
            v = 0;
        }
        close(fd);
    }
    if (v == 0) {
        v = (uint64_t)esc_wall_ms() * 1000003u ^ (uint64_t)getpid() ^ (uint64_t)esc_mono_us();
    }
    return v ? v : 1;
}

/* SIGHUP: the files again, into a copy of the command line's settings;
 * what differs is logged, what a running node can take is applied. A file
 * with an error changes nothing. */
static void run_reload(void *d)
{
    static node_settings fresh; /* large: not on the stack */
    char err[NODE_SETTINGS_ERR_LEN];
    bool usage = false;
    node_settings_fork(&fresh, &argv_only);
    if (node_settings_files(&fresh, &usage, err, sizeof err) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-RELOAD", "not reloaded, running on as before: %s", err);
        node_settings_free(&fresh);
        return;
    }
    int changed = node_settings_diff(&running, &fresh);
    int rc = node_net_reload(d, &fresh.node);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-RELOAD", "a rate limit or the cluster key was not taken: %s",
                esc_strerror(rc));
    }
    esc_log_set_level(fresh.log_level);
    esc_log_set_format(fresh.log_format);
    node_settings_take_reloadable(&running, &fresh);
    conn_guard_cfg guard = {running.node.conn_per_peer, running.node.conn_idle_s};
    conn_guard_set(&guard);
    node_settings_free(&fresh);
    static int reloads; /* numbered: not held back as a repeat of the previous reload */
    ESC_LOG(ESC_LOG_INFO, "SEG-RELOAD", "reloaded reload=%d changed=%d credentials=re-read",
            ++reloads, changed);
}

/* The node as daemon_run sees it. */
static int run_start(void *d, uv_loop_t *loop, const void *cfg)
{
    return node_start(d, loop, cfg);
}

static void run_stop(void *d)
{
    node_stop(d);
}

static bool run_stopping(const void *d)
{
    return ((const node *)d)->stopping;
}

static void run_fini(void *d)
{
    node_fini(d);
}

static int run_exit_code(const void *d)
{
    return ((const node *)d)->exit_code;
}

static bool run_ready(const void *d, char *why, size_t cap)
{
    return node_ready(d, why, cap);
}

/* The settings, or an exit status: 0 after --help/--version, 2 after a
 * message on stderr. Returns -1 when the node should start. */
static int configure(int argc, char **argv)
{
    char err[NODE_SETTINGS_ERR_LEN];
    bool usage = false;
    node_settings_init(&argv_only);
    int rc = node_settings_args(&argv_only, argc, argv, &usage, err, sizeof err);
    if (rc == 0) {
        node_settings_fork(&running, &argv_only);
        rc = node_settings_files(&running, &usage, err, sizeof err);
    }
    if (rc > 0) {
        return 0;
    }
    if (rc == 0 && running.check_only) {
        printf("escrow-segment: configuration ok\n");
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "escrow-segment: %s\n", err);
        if (usage) {
            node_settings_usage(stderr);
        }
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    char why[256];
    if (failpoint_load(FAILPOINT_NODE_EXIT, why, sizeof why) != 0) {
        fprintf(stderr, "escrow-segment: %s\n", why);
        return 2;
    }
    int rc = configure(argc, argv);
    if (rc >= 0) {
        return rc;
    }
    esc_log_set_level(running.log_level);
    esc_log_set_format(running.log_format);
    if (running.node.cluster_key != NULL) {
        (void)wire_set_credential(running.node.cluster_key); /* the heartbeats carry it */
    }
    running.node.incarnation = new_incarnation();
    static const daemon_ops ops = {.name = "escrow-segment",
                                   .stop_log_id = "SEG-STOP",
                                   .stop_note = "finishing batches, then stopping",
                                   .abort_note = "unanswered requests were never acknowledged",
                                   .start = run_start,
                                   .stop = run_stop,
                                   .stopping = run_stopping,
                                   .fini = run_fini,
                                   .exit_code = run_exit_code,
                                   .reload = run_reload,
                                   .ready = run_ready};
    static node n; /* static: reachable until exit */
    return daemon_run(&ops, &n, &running.node);
}
