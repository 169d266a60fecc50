/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_help.c - see ctl_help.h. The synopsis is written to a memory stream
 * and read back line by line: a heading is a line that starts in column 0;
 * an entry starts with two spaces and a lowercase word; continuation lines
 * are indented further. Option lines ("  --dsn DSN ...") are no entries.
 */
#include "ctl_help.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_auth.h"
#include "ctl_opts.h"
#include "ctl_tenant.h"
#include "ctl_top_opts.h"
#include "ctl_usage.h"

/* Options of the credential commands that take a value (ctl_auth.c). */
static bool auth_opt_takes_value(const char *name)
{
    return strcmp(name, "name") == 0 || strcmp(name, "credential") == 0;
}

static bool is_word(const char *s)
{
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        if (!islower((unsigned char)*s) && *s != '-') {
            return false;
        }
    }
    return true;
}

bool ctl_help_wanted(int argc, char *const argv[], const char *words[CTL_HELP_WORDS_MAX],
                     int *nwords)
{
    bool help = false;
    *nwords = 0;
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help = true;
        } else if (strncmp(a, "--", 2) == 0) {
            if (ctl_opt_takes_value(a + 2) || auth_opt_takes_value(a + 2)) {
                i++;
            }
        } else if (*nwords < CTL_HELP_WORDS_MAX && is_word(a)) {
            words[(*nwords)++] = a;
        }
    }
    return help;
}

/* True if the entry line (two spaces, then the command) starts with the
 * words, one space apart (a wider gap starts the entry's description). */
static bool entry_matches(const char *line, const char *const *words, int nwords)
{
    const char *p = line + 2;
    for (int i = 0; i < nwords; i++) {
        size_t n = strlen(words[i]);
        if (strncmp(p, words[i], n) != 0 || (p[n] != ' ' && p[n] != '\n' && p[n] != '\0')) {
            return false;
        }
        p += n;
        if (i + 1 < nwords && (p[0] != ' ' || p[1] == ' ')) {
            return false;
        }
        p += *p == ' ';
    }
    return true;
}

/* Prints the matching entries of text under their headings to f (nothing
 * when f is NULL); returns how many entries matched. */
static int print_entries(FILE *f, const char *text, const char *const *words, int nwords)
{
    const char *heading = NULL, *printed_heading = NULL;
    bool in_match = false;
    int found = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) + 1 : strlen(line);
        if (line[0] != ' ' && line[0] != '\n') {
            heading = line;
            in_match = false;
        } else if (strncmp(line, "  ", 2) == 0 && islower((unsigned char)line[2])) {
            in_match = entry_matches(line, words, nwords);
        } else if (strncmp(line, "   ", 3) != 0) {
            in_match = false; /* an option line, or a blank one */
        }
        if (in_match && f == NULL) {
            found += strncmp(line, "   ", 3) != 0;
        } else if (in_match) {
            if (heading != NULL && heading != printed_heading) {
                const char *hend = strchr(heading, '\n');
                fprintf(f, "%s%.*s", found > 0 ? "\n" : "",
                        (int)(hend != NULL ? hend - heading + 1 : (long)strlen(heading)), heading);
                printed_heading = heading;
            }
            found += strncmp(line, "   ", 3) != 0;
            fwrite(line, 1, len, f);
        }
        line += len;
    }
    return found;
}

int ctl_help(FILE *f, const char *const *words, int nwords)
{
    if (nwords == 0) {
        ctl_usage(f);
        ctl_auth_usage(f);
        ctl_tenant_usage(f);
        fputc('\n', f);
        ctl_top_usage(f);
        return 0;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    if (mem == NULL) {
        return -1;
    }
    ctl_usage(mem);
    ctl_auth_usage(mem);
    ctl_tenant_usage(mem);
    fputc('\n', mem);
    ctl_top_usage(mem);
    if (fclose(mem) != 0) {
        free(text);
        return -1;
    }
    int found = print_entries(NULL, text, words, nwords);
    if (found > 0) {
        print_entries(f, text, words, nwords);
        fputs("\noptions every command takes, defaults and exit codes: escrowctl --help\n", f);
    }
    free(text);
    return found > 0 ? 0 : -1;
}
