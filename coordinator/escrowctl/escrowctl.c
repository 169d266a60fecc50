/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrowctl.c - escrowctl, the escrow admin CLI. Thin: parses argv (ctl_opts),
 * loads the region file of --config (its dsn and coordinator), then ctl_run
 * does the work. The credential commands (ctl_auth.h) and top (ctl_top.h)
 * parse their own options. See `escrowctl --help`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h"
#include "ctl.h"
#include "ctl_auth.h"
#include "ctl_exit.h"
#include "ctl_help.h"
#include "ctl_opts.h"
#include "ctl_top.h"
#include "ctl_top_opts.h"
#include "ctl_tenant.h"
#include "region_cfg.h"

int main(int argc, char **argv)
{
    static ctl_args args;
    char why[CTL_WHY_MAX];
    const ctl_env env = {.dsn = getenv("ESCROW_DSN"), .coordinator = getenv("ESCROW_COORDINATOR")};
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        build_info_print(stdout, "escrowctl");
        return CTL_EXIT_OK;
    }
    argc--;
    argv++;
    const char *words[CTL_HELP_WORDS_MAX];
    int nwords = 0;
    if (ctl_help_wanted(argc, argv, words, &nwords)) {
        if (ctl_top_is_cmd(argc, argv)) {
            return ctl_top_main(argc, argv, &env, stdout); /* top's options are its own */
        }
        if (ctl_help(stdout, words, nwords) != 0) {
            fprintf(stderr, "escrowctl: no command '%s%s%s'\nrun 'escrowctl --help' for usage\n",
                    words[0], nwords > 1 ? " " : "", nwords > 1 ? words[1] : "");
            return CTL_EXIT_USAGE;
        }
        return CTL_EXIT_OK;
    }
    if (ctl_auth_credential(&argc, argv) != 0) {
        return CTL_EXIT_USAGE;
    }
    if (ctl_tenant_is_cmd(argc, argv)) {
        return ctl_tenant_run(argc, argv, stdout);
    }
    if (ctl_auth_is_cmd(argc, argv)) {
        return ctl_auth_run(argc, argv, stdout);
    }
    if (ctl_top_is_cmd(argc, argv)) {
        return ctl_top_main(argc, argv, &env, stdout);
    }
    argc++;
    argv--;
    if (ctl_opts_parse(argc - 1, argv + 1, &env, &args, why) != 0) {
        fprintf(stderr, "escrowctl: %s\nrun 'escrowctl --help' for usage\n", why);
        return CTL_EXIT_USAGE;
    }
    if (args.help) {
        (void)ctl_help(stdout, NULL, 0);
        return CTL_EXIT_OK;
    }
    if (args.nconfig > 0) {
        static region_cfg region; /* large: not on the stack */
        char err[REGION_ERR_LEN];
        if (region_cfg_load(args.config[0], &region, err, sizeof err) != 0) {
            fprintf(stderr, "escrowctl: %s\n", err);
            return CTL_EXIT_USAGE;
        }
        if (ctl_opts_apply_region(&args, &region, why) != 0) {
            fprintf(stderr, "escrowctl: %s\n", why);
            return CTL_EXIT_USAGE;
        }
    }
    return ctl_run(&args, stdout);
}
