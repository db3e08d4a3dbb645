/*
 * fz_table.c -- loads tests/fuzz/fields.tsv, the one machine-readable
 * table of every on-disk field (docs/FORMAT.md and docs/UBJ.md, "The
 * region"), for the mutator, the corruption matrix and the docs check.
 */
#include "fz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* copy_cell -- one tab-separated cell into dst[len]; -1 if too long. */
static int copy_cell(char *dst, size_t len, const char *s, size_t n)
{
    if (n >= len)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* number -- a decimal cell, or -1 when it is not one (variable sizes). */
static int number(const char *s)
{
    if (*s == '\0')
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
        if (v > 1 << 20)
            return -1;
    }
    return (int)v;
}

int fz_table_load(const char *path, struct fz_field **out, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -errno;
    struct fz_field *v = NULL;
    size_t cnt = 0, cap = 0;
    char line[512];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 64;
            struct fz_field *nv = realloc(v, cap * sizeof *v);
            if (nv == NULL) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
        }
        struct fz_field *fl = &v[cnt];
        memset(fl, 0, sizeof *fl);
        char *cells[7];
        size_t lens[7];
        int k = 0;
        char *p = line;
        while (k < 7) {
            char *t = strchr(p, '\t');
            cells[k] = p;
            lens[k] = t ? (size_t)(t - p) : strlen(p);
            k++;
            if (t == NULL)
                break;
            p = t + 1;
        }
        if (k != 7 || strchr(cells[6], '\t') != NULL ||
            copy_cell(fl->doc, sizeof fl->doc, cells[0], lens[0]) ||
            copy_cell(fl->table, sizeof fl->table, cells[1], lens[1]) ||
            copy_cell(fl->st, sizeof fl->st, cells[2], lens[2]) ||
            copy_cell(fl->off, sizeof fl->off, cells[3], lens[3]) ||
            copy_cell(fl->size, sizeof fl->size, cells[4], lens[4]) ||
            copy_cell(fl->name, sizeof fl->name, cells[5], lens[5]) ||
            copy_cell(fl->cls, sizeof fl->cls, cells[6], lens[6])) {
            fprintf(stderr, "%s:%d: expected 7 tab-separated cells\n", path, lineno);
            rc = -EINVAL;
            break;
        }
        fl->o = number(fl->off);
        fl->n = number(fl->size);
        cnt++;
    }
    fclose(f);
    if (rc < 0) {
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}

const struct fz_field *fz_table(size_t *n)
{
    static struct fz_field *tab;
    static size_t ntab;
    if (tab == NULL) {
        char path[4096];
        const char *src = getenv("UBJ_SRC");
        if (getenv("UBJ_FUZZ_FIELDS") != NULL)
            snprintf(path, sizeof path, "%s", getenv("UBJ_FUZZ_FIELDS"));
        else if (src != NULL)
            snprintf(path, sizeof path, "%s/tests/fuzz/fields.tsv", src);
        else
            snprintf(path, sizeof path, "%s", UBJ_FUZZ_FIELDS_DEFAULT);
        int rc = fz_table_load(path, &tab, &ntab);
        if (rc < 0)
            fz_fail("cannot load the field table %s: %s", path, strerror(-rc));
    }
    *n = ntab;
    return tab;
}
