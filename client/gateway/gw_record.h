/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_record.h - a record of every answer the gateway gives, for the test
 * suite: with ESCROW_GATEWAY_RECORD=FILE in its environment the gateway
 * appends one JSON line per answer to FILE,
 *   {"route": "POST /v1/holds", "status": 201, "content_type": "application/json",
 *    "headers": {"Location": "...", ...}, "body": "<the body's text>"}
 * and one per event an event stream sent,
 *   {"route": "GET /v1/events", "event": "<the data line's JSON>"}
 * tests/support/check_openapi.py then validates each line against
 * client/gateway/openapi.json. Off (nothing written, nothing locked)
 * without the variable. Lines are written whole under a mutex: the event
 * streams' threads write too.
 */
#ifndef ESC_GW_RECORD_H
#define ESC_GW_RECORD_H

#include <stdbool.h>
#include <stdint.h>

/* Opens path for appending. Returns 0 or ESC_EIO. */
int gw_record_open(const char *path);
bool gw_record_on(void);
/* One answer: headers as NULL-terminated name, value pairs. */
void gw_record_answer(const char *route, unsigned status, const char *content_type,
                      const char *const *headers, const char *body);
/* One event a stream sent: its data JSON. */
void gw_record_event(const char *route, const char *data);
void gw_record_close(void);

#endif
