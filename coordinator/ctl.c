/*
 * ctl.c - see ctl.h.
 */
#include "ctl.h"

#include <stdbool.h>

#include <libpq-fe.h>

#include "ctl_check.h"
#include "ctl_db.h"
#include "ctl_item.h"
#include "ctl_list.h"
#include "ctl_migrate.h"
#include "ctl_status.h"
#include "escrow_errors.h"
#include "log.h"

static int dispatch(PGconn *conn, const ctl_args *a, FILE *out, bool *violated)
{
    switch (a->cmd) {
    case CTL_CMD_MIGRATE:
        return ctl_migrate(conn, a, out);
    case CTL_CMD_ITEM_CREATE:
        return ctl_item_create(conn, a, out);
    case CTL_CMD_STATUS:
        return ctl_status(conn, a, out);
    case CTL_CMD_HOLDS:
        return ctl_holds(conn, a, out);
    case CTL_CMD_EVENTS:
        return ctl_events(conn, a, out);
    case CTL_CMD_CHECK:
        return ctl_check(conn, a, out, violated);
    case CTL_CMD_NONE:
        break;
    }
    ESC_ASSERT(!"ctl_run called without a command");
    return ESC_EINTERNAL;
}

int ctl_run(const ctl_args *a, FILE *out)
{
    PGconn *conn = NULL;
    int rc = ctl_db_open(a->dsn, &conn);
    if (rc != 0) {
        return ctl_exit_code(a->cmd, rc, false);
    }
    bool violated = false;
    rc = dispatch(conn, a, out, &violated);
    ctl_db_close(conn);
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "escrowctl: cannot write the output\n");
        return CTL_EXIT_FAIL;
    }
    return ctl_exit_code(a->cmd, rc, violated);
}
