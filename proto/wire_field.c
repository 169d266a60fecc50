/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_field.c - the field rules of the wire (see wire_field.h and wire.h):
 * what an identifier, a ttl, a hold id, a segment id, an endpoint or a region
 * may be, shared by the decoders and by libescrow (which checks before it
 * sends), and the hash that makes two reserves "the same request". Pure: no
 * protobuf-c, no I/O.
 */
#include "wire_field.h"

#include <stdio.h>
#include <string.h>

#include "escrow_errors.h"

bool wire_id_valid(const char *s, size_t max)
{
    size_t n = 0;
    if (s == NULL) {
        return false;
    }
    for (; s[n] != '\0'; n++) {
        if (n >= max || (unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e) {
            return false;
        }
    }
    return n > 0;
}

bool wire_ttl_valid(uint32_t ttl_ms)
{
    return ttl_ms == 0 || (ttl_ms >= ESC_TTL_MS_MIN && ttl_ms <= ESC_TTL_MS_MAX);
}

bool wire_hold_id_valid(uint64_t hold_id)
{
    uint64_t seg = hold_id >> ESC_HOLD_SEQ_BITS;
    return seg != 0 && seg <= ESC_SEGMENT_ID_MAX;
}

bool wire_segment_id_valid(uint64_t id)
{
    return id >= 1 && id <= ESC_SEGMENT_ID_MAX;
}

bool wire_endpoint_valid(const char *s)
{
    return wire_id_valid(s, ESC_ENDPOINT_LEN_MAX);
}

bool wire_region_valid(const char *s)
{
    return s != NULL && wire_id_valid(s, ESC_REGION_LEN_MAX);
}

int wire_why(char why[WIRE_WHY_MAX], int rc, const char *msg)
{
    if (why != NULL) {
        snprintf(why, WIRE_WHY_MAX, "%s", msg);
    }
    return rc;
}

int wire_copy_id(char *dst, size_t max, const char *src, char why[WIRE_WHY_MAX], const char *field)
{
    char msg[WIRE_WHY_MAX];
    if (src == NULL || src[0] == '\0') {
        snprintf(msg, sizeof msg, "%s is required", field);
        return wire_why(why, ESC_EINVAL, msg);
    }
    if (strlen(src) > max) {
        snprintf(msg, sizeof msg, "%s is longer than %zu bytes", field, max);
        return wire_why(why, ESC_ETOOBIG, msg);
    }
    if (!wire_id_valid(src, max)) {
        snprintf(msg, sizeof msg, "%s must be printable ASCII without spaces", field);
        return wire_why(why, ESC_EINVAL, msg);
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

void wire_copy_str(char *dst, size_t max, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n > max) {
        n = max;
    }
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

int wire_check_ttl(uint32_t ttl_ms, char why[WIRE_WHY_MAX])
{
    if (!wire_ttl_valid(ttl_ms)) {
        return wire_why(why, ESC_EINVAL,
                        "ttl_ms out of bounds (50 ms .. 24 h, or 0 for the item's)");
    }
    return 0;
}

int wire_check_hold_id(uint64_t hold_id, char why[WIRE_WHY_MAX])
{
    if (!wire_hold_id_valid(hold_id)) {
        return wire_why(why, ESC_EINVAL, "hold_id is not a valid hold id");
    }
    return 0;
}

int64_t wire_reserve_hash(const char *item_id, const char *buyer_id, int64_t qty)
{
    uint64_t h = 1469598103934665603ULL;
    const char *parts[2] = {item_id, buyer_id};
    for (int p = 0; p < 2; p++) {
        for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++) {
            h = (h ^ *s) * 1099511628211ULL;
        }
        h = (h ^ 0xffu) * 1099511628211ULL; /* separator: ("ab","c") != ("a","bc") */
    }
    for (int i = 0; i < 8; i++) {
        h = (h ^ (uint8_t)((uint64_t)qty >> (8 * i))) * 1099511628211ULL;
    }
    return (int64_t)(h & 0x7fffffffffffffffULL);
}
