/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_quota.c - see ctl_quota.h.
 *
 * total <= ESC_TOTAL_MAX (1e9) and shares <= 1000 each over at most
 * CTL_REGIONS_MAX regions: total * share and the sum of shares fit easily
 * in int64_t, so the split is exact integer arithmetic.
 */
#include "ctl_quota.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl_num.h"
#include "escrow_errors.h"
#include "log.h"
#include "wire.h"

/* [quota] share's range (common/region_cfg.h). */
#define SHARE_MAX 1000

/* True if region i should get a leftover unit before region j. */
static bool before(const int64_t rem[], const char *const names[], size_t i, size_t j)
{
    if (rem[i] != rem[j]) {
        return rem[i] > rem[j];
    }
    return strcmp(names[i], names[j]) < 0;
}

int ctl_quota_split(int64_t total, size_t n, const char *const names[], const uint32_t shares[],
                    int64_t out[])
{
    if (n < 1 || n > CTL_REGIONS_MAX || total < 0 || total > ESC_TOTAL_MAX) {
        return ESC_EINVAL;
    }
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (shares[i] < 1 || shares[i] > SHARE_MAX) {
            return ESC_EINVAL;
        }
        sum += shares[i];
    }
    int64_t quota[CTL_REGIONS_MAX], rem[CTL_REGIONS_MAX];
    size_t order[CTL_REGIONS_MAX];
    int64_t given = 0;
    for (size_t i = 0; i < n; i++) {
        quota[i] = total * (int64_t)shares[i] / sum;
        rem[i] = total * (int64_t)shares[i] % sum;
        given += quota[i];
        order[i] = i;
    }
    /* insertion sort by (remainder desc, name asc): n is at most 17 */
    for (size_t i = 1; i < n; i++) {
        size_t k = order[i];
        size_t j = i;
        for (; j > 0 && before(rem, names, k, order[j - 1]); j--) {
            order[j] = order[j - 1];
        }
        order[j] = k;
    }
    int64_t left = total - given;
    ESC_ASSERT(left >= 0 && left < (int64_t)n);
    for (size_t i = 0; i < (size_t)left; i++) {
        quota[order[i]]++;
    }
    memcpy(out, quota, n * sizeof out[0]);
    return 0;
}

static int refuse(char *why, size_t why_len, const char *msg, const char *entry, int len)
{
    snprintf(why, why_len, "--quota: %s in '%.*s' (expected REGION=UNITS,REGION=UNITS...)", msg,
             len, entry);
    return ESC_EINVAL;
}

/* One "NAME=UNITS" entry of len bytes at s. */
static int parse_entry(const char *s, int len, ctl_quota_part *p, char *why, size_t why_len)
{
    const char *eq = memchr(s, '=', (size_t)len);
    if (eq == NULL) {
        return refuse(why, why_len, "no '='", s, len);
    }
    size_t nlen = (size_t)(eq - s);
    if (nlen < 1 || nlen > REGION_NAME_LEN_MAX) {
        return refuse(why, why_len, "a region name must be 1..64 bytes", s, len);
    }
    char name[REGION_NAME_LEN_MAX + 1];
    char units[24];
    size_t ulen = (size_t)len - nlen - 1;
    if (ulen < 1 || ulen >= sizeof units) {
        return refuse(why, why_len, "units must be an integer in 0..1000000000", s, len);
    }
    memcpy(name, s, nlen);
    name[nlen] = '\0';
    memcpy(units, eq + 1, ulen);
    units[ulen] = '\0';
    if (!wire_id_valid(name, REGION_NAME_LEN_MAX)) {
        return refuse(why, why_len, "a region name must be printable ASCII without spaces", s, len);
    }
    if (ctl_num_parse(units, 0, ESC_TOTAL_MAX, &p->units) != 0) {
        return refuse(why, why_len, "units must be an integer in 0..1000000000", s, len);
    }
    memcpy(p->region, name, nlen + 1);
    return 0;
}

int ctl_quota_parse(const char *text, ctl_quota_part parts[CTL_REGIONS_MAX], size_t *n, char *why,
                    size_t why_len)
{
    ctl_quota_part tmp[CTL_REGIONS_MAX];
    size_t count = 0;
    if (text == NULL || text[0] == '\0' || strlen(text) > CTL_QUOTA_LIST_LEN_MAX) {
        snprintf(why, why_len, "--quota needs REGION=UNITS,REGION=UNITS... (at most %d bytes)",
                 CTL_QUOTA_LIST_LEN_MAX);
        return ESC_EINVAL;
    }
    for (const char *s = text;;) {
        int len = (int)strcspn(s, ",");
        if (count == CTL_REGIONS_MAX) {
            snprintf(why, why_len, "--quota names more than %d regions", CTL_REGIONS_MAX);
            return ESC_EINVAL;
        }
        int rc = parse_entry(s, len, &tmp[count], why, why_len);
        if (rc != 0) {
            return rc;
        }
        for (size_t i = 0; i < count; i++) {
            if (strcmp(tmp[i].region, tmp[count].region) == 0) {
                snprintf(why, why_len, "--quota names region '%s' twice", tmp[i].region);
                return ESC_EINVAL;
            }
        }
        count++;
        if (s[len] == '\0') {
            break;
        }
        s += len + 1;
    }
    memcpy(parts, tmp, count * sizeof tmp[0]);
    *n = count;
    return 0;
}
