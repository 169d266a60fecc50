/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region.c - see ctl_region.h.
 */
#include "ctl_region.h"

#include "ctl_region_check.h"
#include "ctl_region_create.h"
#include "ctl_region_list.h"
#include "ctl_region_move.h"
#include "ctl_region_set.h"
#include "ctl_region_show.h"
#include "ctl_region_stock.h"
#include "escrow_errors.h"
#include "log.h"

bool ctl_region_cmd(const ctl_args *a)
{
    return a->global || a->cmd == CTL_CMD_QUOTA_SHOW || a->cmd == CTL_CMD_QUOTA_MOVE ||
           a->cmd == CTL_CMD_REGIONS;
}

int ctl_region_run(const ctl_args *a, FILE *out, bool *violated, bool *refused)
{
    ctl_region_set set = {0, NULL};
    int rc = ctl_region_set_load(a, &set);
    if (rc != 0) {
        return rc;
    }
    switch (a->cmd) {
    case CTL_CMD_ITEM_CREATE:
        rc = ctl_region_create(&set, a, out);
        break;
    case CTL_CMD_QUOTA_SHOW:
        rc = ctl_region_show_quota(&set, a, out);
        break;
    case CTL_CMD_QUOTA_MOVE:
        rc = ctl_region_move(&set, a, out, refused);
        break;
    case CTL_CMD_REGIONS:
        rc = ctl_region_list(&set, a, out);
        break;
    case CTL_CMD_STATUS:
        rc = ctl_region_show_status(&set, a, out);
        break;
    case CTL_CMD_CHECK:
        rc = ctl_region_check(&set, a, out, violated);
        break;
    case CTL_CMD_ITEM_RESTOCK:
    case CTL_CMD_ITEM_REDUCE:
        rc = ctl_region_stock(&set, a, out, refused);
        break;
    default:
        ESC_ASSERT(!"ctl_region_run called for another command");
        rc = ESC_EINTERNAL;
        break;
    }
    ctl_region_set_free(&set);
    return rc;
}
