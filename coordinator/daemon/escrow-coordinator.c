/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow-coordinator.c - escrow-coordinator: reads its settings
 * (coord_settings.h: the command line, the config file, the region file,
 * the environment) and hands the coordinator to the daemon skeleton
 * (daemon.h: the loop, the signals). SIGHUP reads the files again and
 * applies what a running coordinator can take.
 * Exit codes: 0 clean stop, 1 failure (a second signal, a region that
 * cannot run, a schema it does not run on), 2 bad usage or configuration,
 * 3 deposed: another coordinator took the leader lease (coord_leader.h),
 * 99 a failpoint fired (coord_failpoint.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "conn_guard.h"
#include "coord.h"
#include "coord_auth.h"
#include "coord_settings.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"
#include "wire.h"

/* The command line as parsed at start, and the settings the coordinator
 * runs with (it borrows their strings until exit). */
static coord_settings argv_only, running;

/* SIGHUP: the files again, into a copy of the command line's settings;
 * what differs is logged, what a running coordinator can take is applied.
 * A file with an error changes nothing. */
static void run_reload(void *d)
{
    static coord_settings fresh; /* large: not on the stack */
    char err[COORD_SETTINGS_ERR_LEN];
    bool usage = false;
    coord_settings_fork(&fresh, &argv_only);
    if (coord_settings_files(&fresh, &usage, err, sizeof err) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-RELOAD", "not reloaded, running on as before: %s", err);
        coord_settings_free(&fresh);
        return;
    }
    int changed = coord_settings_diff(&running, &fresh);
    if (coord_auth_reload(d, fresh.coord.cluster_key, fresh.coord.cluster_key_prev) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-RELOAD", "the cluster key was not taken (not a key)");
    }
    esc_log_set_level(fresh.log_level);
    esc_log_set_format(fresh.log_format);
    coord_settings_take_reloadable(&running, &fresh);
    conn_guard_cfg guard = {running.coord.conn_per_peer, running.coord.conn_idle_s};
    conn_guard_set(&guard);
    coord_settings_free(&fresh);
    static int reloads; /* numbered: not held back as a repeat of the previous reload */
    ESC_LOG(ESC_LOG_INFO, "COORD-RELOAD", "reloaded reload=%d changed=%d credentials=re-read",
            ++reloads, changed);
}

/* The coordinator as daemon_run sees it. */
static int run_start(void *d, uv_loop_t *loop, const void *cfg)
{
    int rc = coord_start(d, loop, cfg);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-START", "cannot start: %s", esc_strerror(rc));
    }
    return rc;
}

static void run_stop(void *d)
{
    coord_stop(d);
}

static bool run_stopping(const void *d)
{
    return ((const coord *)d)->stopping;
}

static void run_fini(void *d)
{
    coord_fini(d);
}

/* 1 when the region or the schema could not run, else 0. */
static int run_exit_code(const void *d)
{
    return ((const coord *)d)->exit_code;
}

static bool run_ready(const void *d, char *why, size_t cap)
{
    return coord_ready(d, why, cap);
}

/* The settings, or an exit status: 0 after --help/--version, 2 after a
 * message on stderr. Returns -1 when the coordinator should start. */
static int configure(int argc, char **argv)
{
    char err[COORD_SETTINGS_ERR_LEN];
    bool usage = false;
    coord_settings_init(&argv_only);
    int rc = coord_settings_args(&argv_only, argc, argv, &usage, err, sizeof err);
    if (rc == 0) {
        coord_settings_fork(&running, &argv_only);
        rc = coord_settings_files(&running, &usage, err, sizeof err);
    }
    if (rc > 0) {
        return 0;
    }
    if (rc == 0 && running.check_only) {
        printf("escrow-coordinator: configuration ok\n");
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "escrow-coordinator: %s\n", err);
        if (usage) {
            coord_settings_usage(stderr);
        }
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    int rc = configure(argc, argv);
    if (rc >= 0) {
        return rc;
    }
    esc_log_set_level(running.log_level);
    esc_log_set_format(running.log_format);
    if (running.coord.cluster_key != NULL) {
        (void)wire_set_credential(running.coord.cluster_key); /* quota messages carry it */
    }
    static const daemon_ops ops = {.name = "escrow-coordinator",
                                   .stop_log_id = "COORD-STOP",
                                   .stop_note = "stopping",
                                   .abort_note = "",
                                   .start = run_start,
                                   .stop = run_stop,
                                   .stopping = run_stopping,
                                   .fini = run_fini,
                                   .exit_code = run_exit_code,
                                   .reload = run_reload,
                                   .ready = run_ready};
    static coord c; /* static: reachable until exit */
    return daemon_run(&ops, &c, &running.coord);
}
