/*
 * ctl_region.h - escrowctl's commands over several regions (issue 4), each
 * region named by one INI file (--config, common/region_cfg.h) with its own
 * database and coordinator; there is no shared database.
 *
 *   item create --global   the item in every region's database, its total
 *                          split into regional quotas (ctl_quota.h), with a
 *                          global_items row, one transaction per region
 *   quota show             per global item and region: quota, counters,
 *                          quota sent and not yet confirmed, floor
 *   quota move             WIRE_QUOTA_MOVE to the donor region's coordinator
 *   regions                each region: database, region_self, coordinator
 *                          (answers?), peers, quota transfer counts
 *   status --global        each region's status, then a table per global item
 *   check --global         each region's check, then the global invariant of
 *                          migration 0008 (ctl_region_check.c)
 *
 * Every file is loaded and validated, and every database reached, before
 * anything is written; a region whose region_self names another region is
 * refused. Errors are sentences on stderr naming the region and its file.
 */
#ifndef CTL_REGION_H
#define CTL_REGION_H

#include <stdbool.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"
#include "ctl_quota.h"
#include "region_cfg.h"

/* How long `regions` waits for each coordinator's status answer, at most
 * (--timeout-ms when it is shorter): a live coordinator answers on loopback
 * in well under a millisecond. */
#define CTL_REGION_PROBE_MS_MAX 1000

/* One region of a command: its file and its database connection. */
typedef struct ctl_region {
    region_cfg cfg;                    /* loaded from the file */
    PGconn *conn;                      /* owned; NULL = not connected */
    char self[CTL_REGION_LEN_MAX + 1]; /* region_self; "" = not claimed yet */
} ctl_region;

typedef struct ctl_region_set {
    size_t n;
    ctl_region *r; /* owned: n entries in --config order */
} ctl_region_set;

/* True for the commands ctl_region_run carries out. */
bool ctl_region_cmd(const ctl_args *a);

/* Runs one of them. a and out borrowed. Returns 0 or an ESC_E* code (every
 * error explained on stderr); *violated for check, *refused when a
 * coordinator answered with an error. check --global's "cannot judge" is
 * ESC_EUNAVAILABLE (exit 2). */
int ctl_region_run(const ctl_args *a, FILE *out, bool *violated, bool *refused);

/* Loads every --config file (distinct region names). Returns 0 and *set
 * (ctl_region_set_free), or ESC_EINVAL after a sentence on stderr. */
int ctl_region_set_load(const ctl_args *a, ctl_region_set *set);
/* Connects to every region's database and reads region_self, which must be
 * empty or the file's region name. Returns 0, or ESC_EUNAVAILABLE /
 * ESC_EDB / ESC_ECONFLICT after a sentence naming the region. */
int ctl_region_set_connect(ctl_region_set *set);
void ctl_region_set_free(ctl_region_set *set);
/* The index of the region named name, or -1. */
int ctl_region_find(const ctl_region_set *set, const char *name);

/* check --global (ctl_region_check.c); set connected. */
int ctl_region_check(ctl_region_set *set, const ctl_args *a, FILE *out, bool *violated);

#endif
