/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_share.c - see seg_share.h.
 */
#include "seg_share.h"

#include <string.h>

void seg_share_defaults(seg_share_config *cfg)
{
    cfg->slots_max = SEG_SHARE_SLOTS_MAX;
    cfg->slots_min = SEG_SHARE_SLOTS_MIN;
    cfg->slack_pct = SEG_SHARE_SLACK_PCT;
    cfg->margin_us = SEG_SHARE_MARGIN_US;
    cfg->window_us = SEG_SHARE_WINDOW_US;
}

void seg_share_init(seg_share *s, const seg_share_config *cfg, int64_t now_us)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->slots = cfg->slots_max;
    s->fastest_us = -1;
    s->fastest_prev_us = -1;
    s->window_start_us = now_us;
}

void seg_share_configure(seg_share *s, const seg_share_config *cfg)
{
    s->cfg = *cfg;
    if (s->slots > cfg->slots_max) {
        s->slots = cfg->slots_max;
    }
    if (s->slots < cfg->slots_min) {
        s->slots = cfg->slots_min;
    }
}

int64_t seg_share_baseline(const seg_share *s)
{
    if (s->fastest_us < 0) {
        return s->fastest_prev_us;
    }
    if (s->fastest_prev_us < 0 || s->fastest_us < s->fastest_prev_us) {
        return s->fastest_us;
    }
    return s->fastest_prev_us;
}

/* Keeps the fastest commit of the current window; a window over becomes
 * the previous one (two over: nothing left of either). */
static void observe(seg_share *s, int64_t rtt_us, int64_t now_us)
{
    int64_t age = now_us - s->window_start_us;
    if (age >= 2 * s->cfg.window_us) {
        s->fastest_prev_us = -1;
        s->fastest_us = -1;
        s->window_start_us = now_us;
    } else if (age >= s->cfg.window_us) {
        s->fastest_prev_us = s->fastest_us;
        s->fastest_us = -1;
        s->window_start_us += s->cfg.window_us;
    }
    if (s->fastest_us < 0 || rtt_us < s->fastest_us) {
        s->fastest_us = rtt_us;
    }
}

static bool slow(const seg_share *s, int64_t rtt_us, int64_t base_us)
{
    return rtt_us * 100 > base_us * (int64_t)s->cfg.slack_pct &&
           rtt_us - base_us > s->cfg.margin_us;
}

uint32_t seg_share_committed(seg_share *s, int64_t rtt_us, bool shared, int64_t now_us)
{
    if (rtt_us < 0) {
        rtt_us = 0;
    }
    int64_t base = seg_share_baseline(s); /* before this commit counts */
    observe(s, rtt_us, now_us);
    if (!shared || base < 0) {
        s->skip = false;
        return s->slots;
    }
    if (s->skip) {
        s->skip = false;
        return s->slots;
    }
    if (slow(s, rtt_us, base)) {
        uint32_t half = s->slots / 2;
        if (half < s->cfg.slots_min) {
            half = s->cfg.slots_min;
        }
        if (half < s->slots) {
            s->slots = half;
            s->cuts++;
            s->skip = true;
        }
    } else if (s->slots < s->cfg.slots_max) {
        s->slots++;
        s->raises++;
    }
    return s->slots;
}
