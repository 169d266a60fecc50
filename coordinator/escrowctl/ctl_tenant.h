/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_tenant.h - `escrowctl tenant limits`: a tenant's own request rate and
 * cap of live holds at every segment node (node_fair.h; the tenants table's
 * rate_per_s, rate_burst, live_holds_max), or the node's defaults.
 *
 *   escrowctl tenant limits TENANT                  shows them
 *   escrowctl tenant limits TENANT [--rate N[:BURST]|default]
 *                                  [--live-holds N|default]   sets them
 *
 * Nodes re-read them every second. Talks to the database only (--dsn,
 * $ESCROW_DSN or --config).
 */
#ifndef CTL_TENANT_H
#define CTL_TENANT_H

#include <stdbool.h>
#include <stdio.h>

/* True if argv (options already stripped of --credential) is `tenant limits ...`. */
bool ctl_tenant_is_cmd(int argc, char **argv);
/* Runs it; returns a CTL_EXIT_* code. */
int ctl_tenant_run(int argc, char **argv, FILE *out);
void ctl_tenant_usage(FILE *f);

#endif
