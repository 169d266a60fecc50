/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threaded_calls.c - the threaded client's public calls (escrow.h,
 * esc_threaded_*): each turns its arguments into a job (threaded.h) and
 * either waits for it (blocking: the job on the stack, arguments borrowed)
 * or queues it (esc_threaded_submit_*: the job on the heap with its own
 * copy of every string and cart line, so the caller may free them at once).
 * The engine validates the arguments on the client's thread, exactly as
 * for esc_reserve & co.
 */
#include <stdlib.h>
#include <string.h>

#include "esc_limits.h"
#include "escrow.h"
#include "threaded.h"

/* ---- blocking ---------------------------------------------------------- */

static int run_hold(esc_threaded *t, thr_job *j, esc_hold *out)
{
    if (t == NULL) {
        return ESC_EINVAL;
    }
    int rc = cli_threaded_run(t, j);
    if (rc < 0) {
        return rc;
    }
    if (out != NULL && j->done.has_hold) {
        *out = j->done.hold;
    }
    return j->done.status;
}

int esc_threaded_reserve(esc_threaded *t, const esc_reserve_req *req, uint32_t deadline_ms,
                         esc_hold *out)
{
    if (req == NULL) {
        return ESC_EINVAL;
    }
    thr_job j = {.op = THR_RESERVE, .deadline_ms = deadline_ms, .reserve = *req};
    return run_hold(t, &j, out);
}

int esc_threaded_confirm(esc_threaded *t, uint64_t hold_id, int64_t qty, uint32_t deadline_ms,
                         esc_hold *out)
{
    thr_job j = {.op = THR_CONFIRM, .deadline_ms = deadline_ms, .hold_id = hold_id, .qty = qty};
    return run_hold(t, &j, out);
}

int esc_threaded_release(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out)
{
    thr_job j = {.op = THR_RELEASE, .deadline_ms = deadline_ms, .hold_id = hold_id};
    return run_hold(t, &j, out);
}

int esc_threaded_extend(esc_threaded *t, uint64_t hold_id, uint32_t ttl_ms, uint32_t deadline_ms,
                        esc_hold *out)
{
    thr_job j = {
        .op = THR_EXTEND, .deadline_ms = deadline_ms, .hold_id = hold_id, .ttl_ms = ttl_ms};
    return run_hold(t, &j, out);
}

int esc_threaded_get(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out)
{
    thr_job j = {.op = THR_GET, .deadline_ms = deadline_ms, .hold_id = hold_id};
    return run_hold(t, &j, out);
}

int esc_threaded_reserve_cart(esc_threaded *t, const char *buyer_id, const esc_cart_line *lines,
                              size_t nlines, const char *cart_key, uint32_t ttl_ms,
                              uint32_t deadline_ms, esc_hold *holds, size_t *nholds,
                              size_t *failed_line)
{
    if (t == NULL || holds == NULL || nholds == NULL) {
        return ESC_EINVAL;
    }
    thr_job j = {.op = THR_CART,
                 .deadline_ms = deadline_ms,
                 .ttl_ms = ttl_ms,
                 .buyer_id = buyer_id,
                 .cart_key = cart_key,
                 .lines = lines,
                 .nlines = nlines,
                 .holds = holds};
    int rc = cli_threaded_run(t, &j);
    if (rc < 0) {
        return rc;
    }
    if (j.done.status == 0) {
        *nholds = j.done.nholds;
    } else if (failed_line != NULL) {
        *failed_line = j.done.failed_line;
    }
    return j.done.status;
}

int esc_threaded_stats(esc_threaded *t, esc_stats *out)
{
    if (t == NULL || out == NULL) {
        return ESC_EINVAL;
    }
    thr_job j = {.op = THR_STATS, .stats = out};
    return cli_threaded_run(t, &j);
}

/* ---- queued ------------------------------------------------------------ */

static size_t str_size(const char *s)
{
    return s == NULL ? 0 : strlen(s) + 1;
}

/* Copies s to *p and moves *p past it; NULL stays NULL. */
static const char *str_put(char **p, const char *s)
{
    if (s == NULL) {
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *at = *p;
    memcpy(at, s, n);
    *p += n;
    return at;
}

/* Replaces j's borrowed strings and lines by copies in one block (j->copies,
 * owned): the lines first (malloc's alignment suits them), then the strings.
 * Returns 0 or ESC_ENOMEM. */
static int own_args(thr_job *j)
{
    size_t n = j->nlines * sizeof(esc_cart_line) + str_size(j->reserve.item_id) +
               str_size(j->reserve.buyer_id) + str_size(j->reserve.idempotency_key) +
               str_size(j->buyer_id) + str_size(j->cart_key);
    for (size_t i = 0; i < j->nlines; i++) {
        n += str_size(j->lines[i].item_id);
    }
    if (n == 0) {
        return 0;
    }
    char *block = malloc(n);
    if (block == NULL) {
        return ESC_ENOMEM;
    }
    esc_cart_line *lines = (esc_cart_line *)(void *)block;
    char *p = block + j->nlines * sizeof(esc_cart_line);
    for (size_t i = 0; i < j->nlines; i++) {
        lines[i].qty = j->lines[i].qty;
        lines[i].item_id = str_put(&p, j->lines[i].item_id);
    }
    j->lines = j->nlines > 0 ? lines : NULL;
    j->reserve.item_id = str_put(&p, j->reserve.item_id);
    j->reserve.buyer_id = str_put(&p, j->reserve.buyer_id);
    j->reserve.idempotency_key = str_put(&p, j->reserve.idempotency_key);
    j->buyer_id = str_put(&p, j->buyer_id);
    j->cart_key = str_put(&p, j->cart_key);
    j->copies = block;
    return 0;
}

/* Queues a heap copy of the job tmpl describes, with tag. */
static int queue_copy(esc_threaded *t, const thr_job *tmpl, uint64_t tag)
{
    if (t == NULL) {
        return ESC_EINVAL;
    }
    thr_job *j = malloc(sizeof *j);
    if (j == NULL) {
        return ESC_ENOMEM;
    }
    *j = *tmpl;
    j->done.tag = tag;
    if (own_args(j) < 0) {
        free(j);
        return ESC_ENOMEM;
    }
    int rc = cli_threaded_queue(t, j);
    if (rc < 0) {
        free(j->copies);
        free(j);
    }
    return rc;
}

int esc_threaded_submit_reserve(esc_threaded *t, const esc_reserve_req *req, uint32_t deadline_ms,
                                uint64_t tag)
{
    if (req == NULL) {
        return ESC_EINVAL;
    }
    thr_job j = {.op = THR_RESERVE, .deadline_ms = deadline_ms, .reserve = *req};
    return queue_copy(t, &j, tag);
}

int esc_threaded_submit_confirm(esc_threaded *t, uint64_t hold_id, int64_t qty,
                                uint32_t deadline_ms, uint64_t tag)
{
    thr_job j = {.op = THR_CONFIRM, .deadline_ms = deadline_ms, .hold_id = hold_id, .qty = qty};
    return queue_copy(t, &j, tag);
}

int esc_threaded_submit_release(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms,
                                uint64_t tag)
{
    thr_job j = {.op = THR_RELEASE, .deadline_ms = deadline_ms, .hold_id = hold_id};
    return queue_copy(t, &j, tag);
}

int esc_threaded_submit_extend(esc_threaded *t, uint64_t hold_id, uint32_t ttl_ms,
                               uint32_t deadline_ms, uint64_t tag)
{
    thr_job j = {
        .op = THR_EXTEND, .deadline_ms = deadline_ms, .hold_id = hold_id, .ttl_ms = ttl_ms};
    return queue_copy(t, &j, tag);
}

int esc_threaded_submit_get(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms, uint64_t tag)
{
    thr_job j = {.op = THR_GET, .deadline_ms = deadline_ms, .hold_id = hold_id};
    return queue_copy(t, &j, tag);
}

int esc_threaded_submit_reserve_cart(esc_threaded *t, const char *buyer_id,
                                     const esc_cart_line *lines, size_t nlines,
                                     const char *cart_key, uint32_t ttl_ms, uint32_t deadline_ms,
                                     esc_hold *holds, uint64_t tag)
{
    /* Bounded before copying: the engine would refuse more lines anyway. */
    if (holds == NULL || (lines == NULL && nlines > 0) || nlines > ESC_CART_LINES_MAX) {
        return ESC_EINVAL;
    }
    thr_job j = {.op = THR_CART,
                 .deadline_ms = deadline_ms,
                 .ttl_ms = ttl_ms,
                 .buyer_id = buyer_id,
                 .cart_key = cart_key,
                 .lines = lines,
                 .nlines = nlines,
                 .holds = holds};
    return queue_copy(t, &j, tag);
}
