/*
 * main.c - escrowctl, the escrow admin CLI. Thin: parses argv (ctl_opts),
 * then ctl_run does the work. See `escrowctl --help`.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "ctl_opts.h"

int main(int argc, char **argv)
{
    static ctl_args args;
    char why[CTL_WHY_MAX];
    const ctl_env env = {.dsn = getenv("ESCROW_DSN"), .coordinator = getenv("ESCROW_COORDINATOR")};
    if (ctl_args_parse(argc - 1, argv + 1, &env, &args, why) != 0) {
        fprintf(stderr, "escrowctl: %s\nrun 'escrowctl --help' for usage\n", why);
        return CTL_EXIT_USAGE;
    }
    if (args.help) {
        ctl_usage(stdout);
        return CTL_EXIT_OK;
    }
    return ctl_run(&args, stdout);
}
