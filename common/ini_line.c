/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ini_line.c - see ini_line.h.
 */
#include "ini_line.h"

#include <string.h>

char *ini_line_read(char *buf, int cap, FILE *f, size_t max_len, bool *too_long)
{
    *too_long = false;
    if (fgets(buf, cap, f) == NULL) {
        return NULL;
    }
    size_t n = strlen(buf);
    bool cut = n > 0 && buf[n - 1] != '\n' && !feof(f); /* the rest did not fit */
    if (cut) {
        int ch;
        while ((ch = fgetc(f)) != EOF && ch != '\n') {
        }
    }
    n -= n > 0 && buf[n - 1] == '\n';
    n -= n > 0 && buf[n - 1] == '\r';
    if (cut || n > max_len) {
        *too_long = true;
        buf[0] = '\0';
    }
    return buf;
}
