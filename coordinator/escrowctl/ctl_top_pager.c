/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_pager.c - see ctl_top_pager.h.
 */
#include "ctl_top_pager.h"

#include <string.h>

void ctl_top_pager_init(ctl_top_pager *p, int64_t offset)
{
    memset(p, 0, sizeof *p);
    p->offset = offset > 0 ? offset : 0;
}

bool ctl_top_pager_next(ctl_top_pager *p, size_t shown, int64_t matched)
{
    if (shown == 0 || p->offset + (int64_t)shown >= matched) {
        return false;
    }
    if (p->nback == CTL_TOP_PAGER_DEPTH) {
        memmove(p->back, p->back + 1, (CTL_TOP_PAGER_DEPTH - 1) * sizeof p->back[0]);
        p->nback--;
    }
    p->back[p->nback++] = p->offset;
    p->offset += (int64_t)shown;
    return true;
}

bool ctl_top_pager_prev(ctl_top_pager *p, size_t shown)
{
    if (p->nback > 0) {
        p->offset = p->back[--p->nback];
        return true;
    }
    if (p->offset == 0) {
        return false;
    }
    int64_t step = shown > 0 ? (int64_t)shown : 1;
    p->offset = p->offset > step ? p->offset - step : 0;
    return true;
}

void ctl_top_pager_first(ctl_top_pager *p)
{
    ctl_top_pager_init(p, 0);
}

bool ctl_top_pager_clamp(ctl_top_pager *p, int64_t matched)
{
    if (p->offset == 0 || p->offset < matched) {
        return false;
    }
    ctl_top_pager_first(p);
    return true;
}

/* An escape sequence: ESC [ ... final byte (0x40..0x7e), or ESC O x. */
static ctl_top_key decode_escape(const char *buf, size_t n, size_t *used)
{
    static const struct {
        const char *seq;
        ctl_top_key key;
    } seqs[] = {{"\033[6~", CTL_TOP_KEY_NEXT}, {"\033[5~", CTL_TOP_KEY_PREV},
                {"\033[B", CTL_TOP_KEY_NEXT},  {"\033[A", CTL_TOP_KEY_PREV},
                {"\033OB", CTL_TOP_KEY_NEXT},  {"\033OA", CTL_TOP_KEY_PREV},
                {"\033[H", CTL_TOP_KEY_FIRST}, {"\033[1~", CTL_TOP_KEY_FIRST},
                {"\033OH", CTL_TOP_KEY_FIRST}, {"\033[7~", CTL_TOP_KEY_FIRST}};
    size_t len = 1;
    if (n >= 2 && buf[1] == 'O') {
        len = n >= 3 ? 3 : n;
    } else if (n >= 2 && buf[1] == '[') {
        len = 2;
        while (len < n && !(buf[len] >= 0x40 && buf[len] <= 0x7e)) {
            len++;
        }
        len = len < n ? len + 1 : n;
    }
    *used = len;
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        if (strlen(seqs[i].seq) == len && memcmp(seqs[i].seq, buf, len) == 0) {
            return seqs[i].key;
        }
    }
    return CTL_TOP_KEY_NONE;
}

ctl_top_key ctl_top_key_decode(const char *buf, size_t n, size_t *used)
{
    *used = n > 0 ? 1 : 0;
    if (n == 0) {
        return CTL_TOP_KEY_NONE;
    }
    switch (buf[0]) {
    case 'q':
    case 'Q':
    case 3: /* Ctrl-C */
        return CTL_TOP_KEY_QUIT;
    case 'n':
    case ' ':
    case 'j':
        return CTL_TOP_KEY_NEXT;
    case 'p':
    case 'b':
    case 'k':
        return CTL_TOP_KEY_PREV;
    case 'g':
        return CTL_TOP_KEY_FIRST;
    case 'r':
    case 12: /* Ctrl-L */
        return CTL_TOP_KEY_REDRAW;
    case 033:
        return decode_escape(buf, n, used);
    default:
        return CTL_TOP_KEY_NONE;
    }
}
