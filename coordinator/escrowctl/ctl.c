/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl.c - see ctl.h.
 */
#include "ctl.h"

#include <stdbool.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_admin.h"
#include "ctl_check.h"
#include "ctl_db.h"
#include "ctl_exit.h"
#include "ctl_feed.h"
#include "ctl_import.h"
#include "ctl_item.h"
#include "ctl_list.h"
#include "ctl_migrate.h"
#include "ctl_migrate_status.h"
#include "ctl_nodes.h"
#include "ctl_restore.h"
#include "ctl_retention.h"
#include "ctl_region.h"
#include "ctl_release.h"
#include "ctl_status.h"
#include "escrow_errors.h"
#include "log.h"

/* What a command found besides its return code. */
typedef struct outcome {
    bool violated; /* check: an invariant is broken; migrate --status: not current */
    bool refused;  /* the coordinator or a node answered with an error */
} outcome;

static int dispatch(PGconn *conn, const ctl_args *a, FILE *out, outcome *o)
{
    switch (a->cmd) {
    case CTL_CMD_MIGRATE:
        return a->status ? ctl_migrate_status(conn, a, out, &o->violated)
                         : ctl_migrate(conn, a, out);
    case CTL_CMD_ITEM_CREATE:
        return ctl_item_create(conn, a, out);
    case CTL_CMD_ITEM_IMPORT:
        return ctl_import(conn, a, out);
    case CTL_CMD_STATUS:
        return ctl_status(conn, a, out);
    case CTL_CMD_NODES:
        return ctl_nodes(conn, a, out);
    case CTL_CMD_TRANSFERS:
        return ctl_nodes_transfers(conn, a, out);
    case CTL_CMD_RELEASE:
        return ctl_release(conn, a, out, &o->refused);
    case CTL_CMD_HOLDS:
        return ctl_list_holds(conn, a, out);
    case CTL_CMD_EVENTS:
        return ctl_list_events(conn, a, out);
    case CTL_CMD_CHECK:
        return ctl_check(conn, a, out, &o->violated);
    case CTL_CMD_CONSUMERS:
        return ctl_feed_consumers(conn, a, out);
    case CTL_CMD_RETENTION_SHOW:
    case CTL_CMD_RETENTION_RUN:
        return ctl_retention(conn, a, out, a->cmd == CTL_CMD_RETENTION_RUN);
    case CTL_CMD_RESTORE_FENCE:
        return ctl_restore_fence(conn, a, out);
    case CTL_CMD_RESTORE_XID_EPOCH:
        return ctl_restore_xid_epoch(conn, a, out);
    default:
        break;
    }
    ESC_ASSERT(!"ctl_run called without a database command");
    return ESC_EINTERNAL;
}

/* The commands that take TENANT [ITEM] filters. */
static bool takes_scope(const ctl_args *a)
{
    switch (a->cmd) {
    case CTL_CMD_STATUS:
    case CTL_CMD_TRANSFERS:
    case CTL_CMD_HOLDS:
    case CTL_CMD_EVENTS:
    case CTL_CMD_CONSUMERS:
        return a->tenant[0] != '\0';
    default:
        return false;
    }
}

/* The database commands: one connection, the scope checked first. */
static int run_db(const ctl_args *a, FILE *out, outcome *o)
{
    PGconn *conn = NULL;
    int rc = ctl_db_open(a->dsn, &conn);
    if (rc != 0) {
        return rc;
    }
    rc = takes_scope(a) ? ctl_db_scope(conn, a->tenant, a->item) : 0;
    if (rc == 0 && a->follow) {
        ctl_db_close(conn); /* the feed opens its own connection */
        return ctl_feed_follow(a, out);
    }
    if (rc == 0) {
        rc = dispatch(conn, a, out, o);
    }
    ctl_db_close(conn);
    return rc;
}

int ctl_run(const ctl_args *a, FILE *out)
{
    outcome o = {false, false};
    int rc = 0;
    if (ctl_region_cmd(a)) {
        rc = ctl_region_run(a, out, &o.violated, &o.refused); /* one database per region */
    } else if (ctl_opts_is_admin(a->cmd)) {
        rc = ctl_admin(a, out, &o.refused);
    } else {
        rc = run_db(a, out, &o);
        if (rc == ESC_EUNAVAILABLE) {
            return ctl_exit_code(a->cmd, rc, false, false);
        }
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "escrowctl: cannot write the output\n");
        return CTL_EXIT_FAIL;
    }
    return ctl_exit_code(a->cmd, rc, o.violated, o.refused);
}
