/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_set.h - the regions one escrowctl command works on: one INI
 * file each (--config, common/region_cfg.h, in command-line order), each
 * with its own database and coordinator; there is no shared database.
 *
 * Every file is loaded and validated before any database is reached; a
 * region whose database says (region_self) that it belongs to another
 * region is refused. Errors are sentences on stderr naming the region and
 * its file.
 */
#ifndef CTL_REGION_SET_H
#define CTL_REGION_SET_H

#include <stddef.h>

#include <libpq-fe.h>

#include "ctl_opts.h"
#include "region_cfg.h"

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

/* Loads every --config file of a (distinct region names). Returns 0 and *set
 * (ctl_region_set_free), or ESC_EINVAL after a sentence on stderr. */
int ctl_region_set_load(const ctl_args *a, ctl_region_set *set);
/* Connects to every region's database and reads region_self, which must be
 * empty or the file's region name. Returns 0, or ESC_EUNAVAILABLE /
 * ESC_EDB / ESC_ECONFLICT after a sentence naming the region. */
int ctl_region_set_connect(ctl_region_set *set);
/* Connects to one region (r borrowed) and reads its region_self into
 * r->self, whatever it says. Returns 0 or an ESC_E* code after a sentence. */
int ctl_region_set_open(ctl_region *r);
void ctl_region_set_free(ctl_region_set *set);

/* The index of the region named name, or -1. */
int ctl_region_set_find(const ctl_region_set *set, const char *name);
/* region_self of the database on conn into self[cap] ("" when unclaimed).
 * Returns 0 or an ESC_E* code (reported by ctl_db). */
int ctl_region_set_self(PGconn *conn, char *self, size_t cap);

#endif
