/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_num.c - see ctl_num.h.
 */
#include "ctl_num.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "escrow_errors.h"

int ctl_num_parse(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (s == NULL || (s[0] != '-' && (s[0] < '0' || s[0] > '9'))) {
        return ESC_EINVAL;
    }
    if (s[0] == '-' && (s[1] < '0' || s[1] > '9')) {
        return ESC_EINVAL;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return ESC_EINVAL;
    }
    *out = (int64_t)v;
    return 0;
}

int64_t ctl_num_split(int64_t total, int segments, int seg_no)
{
    if (total < 0 || segments < 1 || seg_no < 0 || seg_no >= segments) {
        return 0;
    }
    int64_t share = total / segments;
    int64_t rest = total % segments;
    return share + (seg_no < rest ? 1 : 0);
}

void ctl_num_format_ms(int ms, char *buf, size_t cap)
{
    if (ms % 1000 == 0) {
        snprintf(buf, cap, "%d s", ms / 1000);
    } else {
        snprintf(buf, cap, "%d ms", ms);
    }
}
