/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ini_line.h - one line of an INI file for libinih's stream reader
 * (ini_parse_stream), read the same way for the daemons' config files
 * (config.h) and the region files (region_cfg.h): a line longer than the
 * file format allows is swallowed whole and reported, never split into two.
 */
#ifndef ESC_INI_LINE_H
#define ESC_INI_LINE_H

#include <stdbool.h>
#include <stdio.h>

/* Reads the next line of f into buf (cap bytes), fgets-like. Returns NULL
 * at the end of the file. Otherwise buf, and *too_long is true when the
 * line (without its "\n" or "\r\n") is longer than max_len bytes or did not
 * fit in buf: the rest of it was read and dropped, and buf is then "" so
 * that inih sees an empty line (the caller reports the error). */
char *ini_line_read(char *buf, int cap, FILE *f, size_t max_len, bool *too_long);

#endif
