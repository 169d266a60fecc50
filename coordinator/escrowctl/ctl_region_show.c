/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_show.c - see ctl_region_show.h.
 */
#include "ctl_region_show.h"

#include <inttypes.h>

#include "ctl_status.h"
#include "escrow_errors.h"

static void json_fig(ctl_json *j, const char *region, const ctl_region_view_fig *f)
{
    ctl_json_begin_obj(j, NULL);
    ctl_json_str(j, "region", region);
    ctl_json_str(j, "state", f->state);
    ctl_json_i64(j, "quota", f->quota);
    ctl_json_i64(j, "available", f->available);
    ctl_json_i64(j, "held", f->held);
    ctl_json_i64(j, "sold", f->sold);
    ctl_json_i64(j, "unallocated", f->unallocated);
    ctl_json_i64(j, "in_flight_out", f->sent_out);
    ctl_json_i64(j, "floor", f->floor);
    ctl_json_i64(j, "unused", ctl_region_view_unused(f));
    ctl_json_i64(j, "reduce_pending", f->reduce_pending);
    ctl_json_i64(j, "global_total", f->global_total);
    ctl_json_end_obj(j);
}

void ctl_region_show_totals(ctl_json *j, const ctl_region_view_item *it)
{
    ctl_json_i64(j, "global_total", it->global_total);
    ctl_json_i64(j, "quotas", it->quotas);
    ctl_json_i64(j, "available", it->available);
    ctl_json_i64(j, "held", it->held);
    ctl_json_i64(j, "sold", it->sold);
    ctl_json_i64(j, "in_flight", it->in_flight - it->counted_twice);
    ctl_json_i64(j, "unused", it->unused);
    ctl_json_i64(j, "reduce_pending", it->pending);
}

static void print_show_json(const ctl_region_set *set, const ctl_region_view *v, FILE *out)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "items");
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_region_view_item *it = &v->items[i];
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", it->tenant);
        ctl_json_str(&j, "item", it->item);
        ctl_region_show_totals(&j, it);
        ctl_json_begin_arr(&j, "regions");
        for (size_t r = 0; r < set->n; r++) {
            if (it->fig[r].present) {
                json_fig(&j, set->r[r].cfg.name, &it->fig[r]);
            }
        }
        ctl_json_end_arr(&j);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_bool(&j, "more", v->more);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static void print_show(const ctl_region_set *set, const ctl_region_view *v, FILE *out)
{
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_region_view_item *it = &v->items[i];
        int64_t sent = 0;
        fprintf(out, "%s/%s global_total=%" PRId64 "\n", it->tenant, it->item, it->global_total);
        fprintf(out, "  %-12s %10s %10s %8s %10s %11s %13s %8s\n", "region", "quota", "available",
                "held", "sold", "unallocated", "in_flight_out", "floor");
        for (size_t r = 0; r < set->n; r++) {
            const ctl_region_view_fig *f = &it->fig[r];
            if (!f->present) {
                fprintf(out, "  %-12s (no such global item)\n", set->r[r].cfg.name);
                continue;
            }
            sent += f->sent_out;
            fprintf(out,
                    "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %11" PRId64
                    " %13" PRId64 " %8" PRId64 "\n",
                    set->r[r].cfg.name, f->quota, f->available, f->held, f->sold, f->unallocated,
                    f->sent_out, f->floor);
        }
        fprintf(out,
                "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %11s %13" PRId64
                " %8s\n",
                "(global)", it->quotas, it->available, it->held, it->sold, "", sent, "");
    }
    if (v->nitems == 0) {
        fprintf(out, "no global items\n");
    }
    if (v->more) {
        fprintf(out, "(only the first %d global items of each region are shown)\n",
                CTL_STATUS_ITEMS_MAX);
    }
}

int ctl_region_show_quota(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    ctl_region_view v;
    int rc = ctl_region_set_connect(set);
    rc = rc != 0 ? rc : ctl_region_view_read(set, a, 0, NULL, &v);
    if (rc != 0) {
        return rc;
    }
    if (a->json) {
        print_show_json(set, &v, out);
    } else {
        print_show(set, &v, out);
    }
    ctl_region_view_free(&v);
    return 0;
}

void ctl_region_show_table(const ctl_region_view *v, FILE *out)
{
    fprintf(out, "%-10s %-16s %10s %10s %8s %10s %9s %12s %s\n", "tenant", "item", "quotas", "sold",
            "held", "available", "in_flight", "global_total", "ok");
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_region_view_item *it = &v->items[i];
        fprintf(out,
                "%-10s %-16s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %9" PRId64
                " %12" PRId64 " %s\n",
                it->tenant, it->item, it->quotas, it->sold, it->held, it->available,
                it->in_flight - it->counted_twice, it->global_total,
                it->ok ? "ok" : (it->judged ? "VIOLATED" : "CANNOT-JUDGE"));
    }
}

/* status --global: per global item, each region's line and the global
 * line (the global total, the sums, the units in flight between regions). */
static void print_status_global(const ctl_region_set *set, const ctl_region_view *v, FILE *out)
{
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_region_view_item *it = &v->items[i];
        fprintf(out, "%s/%s global_total=%" PRId64 " %s\n", it->tenant, it->item, it->global_total,
                it->ok ? "ok" : (it->judged ? "VIOLATED" : "CANNOT-JUDGE"));
        fprintf(out, "  %-12s %10s %10s %8s %10s %10s %10s\n", "region", "total", "unused", "held",
                "sold", "in_flight", "reducing");
        for (size_t r = 0; r < set->n; r++) {
            const ctl_region_view_fig *f = &it->fig[r];
            if (!f->present) {
                fprintf(out, "  %-12s (no such global item)\n", set->r[r].cfg.name);
                continue;
            }
            fprintf(out,
                    "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %10" PRId64
                    " %10" PRId64 "\n",
                    set->r[r].cfg.name, f->quota, ctl_region_view_unused(f), f->held, f->sold,
                    f->sent_out, f->reduce_pending);
        }
        fprintf(out,
                "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %10" PRId64
                " %10" PRId64 "\n",
                "(global)", it->global_total, it->unused, it->held, it->sold,
                it->in_flight - it->counted_twice, it->pending);
    }
    if (v->nitems == 0) {
        fprintf(out, "no global items\n");
    }
    if (v->more) {
        fprintf(out, "(only the first %d global items of each region are shown)\n",
                CTL_STATUS_ITEMS_MAX);
    }
}

int ctl_region_show_status(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    int rc = ctl_region_set_connect(set);
    for (size_t r = 0; rc == 0 && !a->json && r < set->n; r++) {
        fprintf(out, "== region %s (%s)\n", set->r[r].cfg.name, set->r[r].cfg.path);
        rc = ctl_status(set->r[r].conn, a, out);
        rc = rc == ESC_EUNKNOWN_ITEM ? 0 : rc;
    }
    ctl_region_view v;
    rc = rc != 0 ? rc : ctl_region_view_read(set, a, CTL_VIEW_MATCH, NULL, &v);
    if (rc != 0) {
        return rc;
    }
    if (a->json) {
        print_show_json(set, &v, out);
    } else {
        fprintf(out, "== global items\n");
        print_status_global(set, &v, out);
    }
    ctl_region_view_free(&v);
    return 0;
}
