/*
 * escrowctl.c - escrowctl, the escrow admin CLI. Thin: parses argv (ctl_opts),
 * loads the region file of --config (its dsn and coordinator), then ctl_run
 * does the work. See `escrowctl --help`.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "ctl_auth.h"
#include "ctl_exit.h"
#include "ctl_opts.h"
#include "ctl_tenant.h"
#include "ctl_usage.h"
#include "region_cfg.h"

int main(int argc, char **argv)
{
    static ctl_args args;
    char why[CTL_WHY_MAX];
    const ctl_env env = {.dsn = getenv("ESCROW_DSN"), .coordinator = getenv("ESCROW_COORDINATOR")};
    argc--;
    argv++;
    if (ctl_auth_credential(&argc, argv) != 0) {
        return CTL_EXIT_USAGE;
    }
    if (ctl_tenant_is_cmd(argc, argv)) {
        return ctl_tenant_run(argc, argv, stdout);
    }
    if (ctl_auth_is_cmd(argc, argv)) {
        return ctl_auth_run(argc, argv, stdout);
    }
    argc++;
    argv--;
    if (ctl_opts_parse(argc - 1, argv + 1, &env, &args, why) != 0) {
        fprintf(stderr, "escrowctl: %s\nrun 'escrowctl --help' for usage\n", why);
        return CTL_EXIT_USAGE;
    }
    if (args.help) {
        ctl_usage(stdout);
        ctl_auth_usage(stdout);
        ctl_tenant_usage(stdout);
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
