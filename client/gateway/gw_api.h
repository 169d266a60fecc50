/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_api.h - what each endpoint of escrow-gateway does with a request
 * whose body arrived: the documents and probes answer at once; every other
 * endpoint checks the credential (gw_auth.h), the tenant's rate limit, the
 * body (gw_json.h) and the Idempotency-Key, then calls libescrow on the
 * tenant key's client (gw_clients.h) and answers from its callback by the
 * idempotency rules (gw_idem.h) and the answer table (gw_answer.h).
 */
#ifndef ESC_GW_API_H
#define ESC_GW_API_H

#include "gw.h"

/* gw_http's dispatch and done callbacks (arg: the gw). */
void gw_api_dispatch(gw_req *r, void *arg);
void gw_api_done(gw_req *r, void *arg);

#endif
