/* SPDX-License-Identifier: Apache-2.0 */
/*
 * esc_probe.c - the C driver of the integration tests (the scripts in
 * tests/integration/): main, which parses the command line (probe_args.c)
 * and runs one sub-command.
 *
 * One sub-command per job a shell script cannot do well itself, one file
 * per family of them:
 *   probe_single.c      reserve confirm release extend get cart reserve-each: blocking calls
 *   probe_call.c        call acall: one call, blocking or asynchronous, and its output
 *   probe_race.c        same-key cr-race rx-race: calls that meet at the node
 *   probe_record.c      record verify fence-load: acknowledged outcomes written down
 *   probe_raw.c         raw: frames and TCP no well-behaved client would send
 *   probe_frame.c       frame hint-reserve op-release: one hand-built request
 *   fake_coordinator.c  fake-coord: a fake coordinator for a managed node
 * The many-calls-in-flight machinery the races and recordings run on is
 * probe_inflight.c; the raw REQ socket probe_req.c.
 *
 * Conventions (probe.h): machine-readable lines on stdout, diagnostics on
 * stderr; exit 0 when the sub-command's own checks hold, 1 with
 * "esc_probe: FAIL: ..." when a guarantee broke, 2 on a usage error. The
 * single-call sub-commands exit 0 whatever the node answered: the answer is
 * the output, the script asserts on it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "esc_limits.h"
#include "fake_coordinator.h"
#include "probe.h"
#include "probe_call.h"
#include "probe_frame.h"
#include "probe_race.h"
#include "probe_raw.h"
#include "probe_record.h"
#include "probe_single.h"
#include "wire.h"

/* No probe runs longer than this (ESC_PROBE_TIMEOUT_S overrides): a hung
 * probe must fail its test, not hang it. */
#define PROBE_TIMEOUT_S_DEFAULT 55

typedef struct probe_cmd {
    const char *name;
    int (*fn)(const probe_args *args);
    bool needs_item, needs_key, needs_prefix, needs_hold;
} probe_cmd;

static const probe_cmd probe_cmds[] = {
    {"reserve", probe_single, true, true, false, false},
    {"confirm", probe_single, false, false, false, true},
    {"release", probe_single, false, false, false, true},
    {"extend", probe_single, false, false, false, true},
    {"get", probe_single, false, false, false, true},
    {"same-key", probe_same_key, true, true, false, false},
    {"cr-race", probe_cr_race, true, false, true, false},
    {"rx-race", probe_rx_race, true, false, true, false},
    {"record", probe_record, true, false, true, false},
    {"verify", probe_verify, true, false, false, false},
    {"fence-load", probe_fence_load, true, false, true, false},
    {"raw", probe_raw, true, false, false, false},
    {"cart", probe_cart, true, true, false, false},
    {"reserve-each", probe_reserve_each, true, true, false, false},
    {"fake-coord", fake_coordinator_run, false, false, false, false},
    {"hint-reserve", probe_hint_reserve, true, true, false, false},
    {"op-release", probe_op_release, false, false, false, true},
    {"frame", probe_frame, false, false, false, false},
    {"call", probe_call, false, false, false, false},
    {"acall", probe_acall, false, false, false, false},
};

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "esc_probe: FAIL: still running at its time limit "
                              "(ESC_PROBE_TIMEOUT_S); killed itself\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(PROBE_EXIT_FAIL);
}

static void arm_watchdog(void)
{
    const char *env = getenv("ESC_PROBE_TIMEOUT_S");
    long s = env != NULL ? strtol(env, NULL, 10) : PROBE_TIMEOUT_S_DEFAULT;
    if (s > 0) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)s);
    }
}

static const probe_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof probe_cmds / sizeof probe_cmds[0]; i++) {
        if (strcmp(probe_cmds[i].name, name) == 0) {
            return &probe_cmds[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    probe_args args;
    if (probe_args_parse(argc, argv, &args) < 0) {
        return PROBE_EXIT_USAGE;
    }
    if (args.credential != NULL && strlen(args.credential) > ESC_CREDENTIAL_LEN_MAX) {
        fprintf(stderr, "esc_probe: --credential is longer than %d bytes\n",
                ESC_CREDENTIAL_LEN_MAX);
        return PROBE_EXIT_USAGE;
    }
    /* A key signs every frame; a text that is not one (or --cleartext) is
     * what frame sends in the retired cleartext field instead. */
    if (args.credential != NULL && !args.cleartext) {
        (void)wire_set_credential(args.credential);
    }
    const probe_cmd *c = find_cmd(args.cmd);
    if (c == NULL) {
        fprintf(stderr, "esc_probe: unknown command '%s'\n", args.cmd);
        probe_args_usage(stderr);
        return PROBE_EXIT_USAGE;
    }
    if ((c->needs_item && args.item == NULL) || (c->needs_key && args.key == NULL) ||
        (c->needs_prefix && args.prefix == NULL) || (c->needs_hold && args.hold_id == 0)) {
        fprintf(stderr, "esc_probe %s: missing --item, --key, --prefix or --hold\n", c->name);
        return PROBE_EXIT_USAGE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    arm_watchdog();
    return c->fn(&args);
}
