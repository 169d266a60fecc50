/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_change.h - which catalog rows the coordinator reads again. No I/O.
 *
 * Every catalog row (items, segments, transfers, global_items, nodes) has
 * cat_xid, the id of the transaction that last changed a column the
 * coordinator keeps in memory (migration 0018_catalog_xid). A read takes
 * the xmin of its first statement's snapshot and fetches the rows with
 * cat_xid >= the mark; when it is complete, the mark becomes that xmin. A
 * transaction not visible to a snapshot has an id >= the snapshot's xmin:
 * one that took its id before a read and committed after it is fetched by
 * the next read (rows visible to both are fetched twice; applying a row is
 * idempotent). Reading cat_xid > the highest id seen would miss it.
 *
 * A row the read could not apply (a write of the coordinator's own is in
 * flight on it, or its item is not known yet) keeps the mark at or below
 * its cat_xid, so that the next read fetches it again. A read whose part
 * was dropped (a heartbeat changed a transfer meanwhile) leaves the mark
 * where it was. A failed read changes nothing.
 *
 * The first read after a start is a full one (from 0), and a full read
 * runs again when the last one is full_us old: the safety net for a row
 * changed with the triggers off, or a transfer deleted by hand.
 */
#ifndef ESC_COORD_CHANGE_H
#define ESC_COORD_CHANGE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct coord_change {
    bool known;     /* mark is the mark of a complete read since the start */
    uint64_t mark;  /* rows with cat_xid >= mark may differ from memory */
} coord_change;

/* One read: its own bookkeeping, filled as its statements finish. */
typedef struct coord_change_run {
    bool full;         /* read from 0 */
    uint64_t since;    /* the mark it reads from */
    bool have_xmin;    /* xmin below was read */
    uint64_t xmin;     /* its first statement's snapshot's xmin */
    bool kept;         /* a row was not applied: keep below */
    uint64_t keep;     /* the lowest cat_xid of a row not applied */
    bool incomplete;   /* a part was dropped: read from since again */
} coord_change_run;

/* Whether the poll reads the whole catalog now: nothing known yet, or the
 * last full read was queued since_full_us ago and full_us has passed. */
bool coord_change_full_due(const coord_change *s, int64_t since_full_us, int64_t full_us);
/* Starts a read: full (from 0) or from the mark (s must be known). */
void coord_change_begin(const coord_change *s, coord_change_run *r, bool full);
/* The read's snapshot xmin. */
void coord_change_xmin(coord_change_run *r, uint64_t xmin);
/* A row with this cat_xid was not applied. */
void coord_change_keep(coord_change_run *r, uint64_t cat_xid);
/* The read is over (ok: every statement succeeded): the new mark. A probe
 * that found no row changed is a read that applied nothing. */
void coord_change_finish(coord_change *s, const coord_change_run *r, bool ok);
/* Parses an xid8 as PostgreSQL prints it (decimal); 0 or -1 (bad text). */
int coord_change_parse_xid(const char *text, uint64_t *out);

#endif
