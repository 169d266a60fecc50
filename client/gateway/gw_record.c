/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_record.c - see gw_record.h.
 */
#include "gw_record.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>
#include <uv.h>

#include "escrow_errors.h"

static FILE *record_file;
static uv_mutex_t record_mu;

int gw_record_open(const char *path)
{
    if (uv_mutex_init(&record_mu) != 0) {
        return ESC_EIO;
    }
    record_file = fopen(path, "a");
    return record_file != NULL ? 0 : ESC_EIO;
}

bool gw_record_on(void)
{
    return record_file != NULL;
}

static void write_line(json_t *doc)
{
    char *s = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (s == NULL) {
        return;
    }
    uv_mutex_lock(&record_mu);
    fprintf(record_file, "%s\n", s);
    fflush(record_file);
    uv_mutex_unlock(&record_mu);
    free(s);
}

void gw_record_answer(const char *route, unsigned status, const char *content_type,
                      const char *const *headers, const char *body)
{
    if (record_file == NULL) {
        return;
    }
    json_t *h = json_object();
    for (size_t i = 0; headers != NULL && headers[i] != NULL && headers[i + 1] != NULL; i += 2) {
        json_object_set_new(h, headers[i], json_string(headers[i + 1]));
    }
    write_line(json_pack("{s:s, s:i, s:s, s:o, s:s?}", "route", route, "status", (int)status,
                         "content_type", content_type, "headers", h, "body", body));
}

void gw_record_event(const char *route, const char *data)
{
    if (record_file != NULL && data != NULL) {
        write_line(json_pack("{s:s, s:s}", "route", route, "event", data));
    }
}

void gw_record_close(void)
{
    if (record_file != NULL) {
        fclose(record_file);
        record_file = NULL;
        uv_mutex_destroy(&record_mu);
    }
}
