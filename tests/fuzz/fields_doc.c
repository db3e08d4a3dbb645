/*
 * fuzz/fields_doc.c -- the field table (tests/fuzz/fields.tsv) against the
 * docs: every row of every offset table of docs/FORMAT.md and of
 * docs/UBJ.md ("The region") is a row of the table with the same offset
 * and size, and every row of the table is in the docs; the fixed fields
 * of each structure follow each other without a gap or an overlap.
 * Tables are named "<section>#<n>": the n-th table with an Offset column
 * in the section (FORMAT.md: the section number; UBJ.md: the heading).
 */
#include "fz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct docrow {
    char doc[16], table[48], name[40], off[24], size[16];
    int line, used;
};

static struct docrow rows[1024];
static int nrows, problems;

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    size_t k = strspn(s, " \t");
    memmove(s, s + k, strlen(s + k) + 1);
}

/* split -- the cells of a table line (without the outer bars). */
static int split(char *line, char **cells, int max)
{
    int n = 0;
    char *p = line + 1;
    while (n < max) {
        char *bar = p;
        while (*bar && !(*bar == '|' && bar[-1] != '\\'))
            bar++;
        if (*bar == '\0')
            break;
        *bar = '\0';
        trim(p);
        cells[n++] = p;
        p = bar + 1;
    }
    return n;
}

/* field_name -- `name` or the words before " (". */
static void field_name(const char *cell, char *out, size_t len)
{
    if (cell[0] == '`') {
        const char *e = strchr(cell + 1, '`');
        size_t n = e ? (size_t)(e - cell - 1) : strlen(cell + 1);
        snprintf(out, len, "%.*s", (int)n, cell + 1);
        return;
    }
    const char *e = strstr(cell, " (");
    size_t n = e ? (size_t)(e - cell) : strlen(cell);
    snprintf(out, len, "%.*s", (int)n, cell);
}

static void parse_doc(const char *src, const char *doc)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/%s", src, doc);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    char line[2048], section[40] = "", label[40] = "";
    int ordinal = 0, in_table = 0, lineno = 0, c_off = -1, c_size = -1, c_field = -1,
        c_label = -1, rowno = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "## ", 3) == 0) {
            const char *h = line + 3;
            size_t sp = strcspn(h, " ");
            if (sp > 0 && h[sp - 1] == '.')
                snprintf(section, sizeof section, "%.*s", (int)(sp - 1), h);
            else
                snprintf(section, sizeof section, "%.39s", h);
            ordinal = 0;
        }
        if (line[0] != '|') {
            in_table = 0;
            continue;
        }
        char *cells[16];
        int n = split(line, cells, 16);
        if (!in_table) {
            in_table = 1;
            rowno = 0;
            c_off = c_size = c_field = c_label = -1;
            for (int i = 0; i < n; i++) {
                if (strstr(cells[i], "Offset") != NULL || strstr(cells[i], "offset") != NULL)
                    c_off = i;
                else if (strcmp(cells[i], "Size") == 0)
                    c_size = i;
                else if (strcmp(cells[i], "Field") == 0 || strcmp(cells[i], "Contents") == 0)
                    c_field = i;
            }
            if (c_off >= 0 && c_size == c_off + 1) {
                if (c_field < 0)
                    c_field = c_size + 1;
                c_label = c_off > 0 ? 0 : -1;
                ordinal++;
            } else {
                c_off = -1;
            }
            continue;
        }
        if (c_off < 0 || ++rowno == 1)       /* not an offset table / the |---| line */
            continue;
        if (n <= c_field || cells[c_off][0] == '\0')
            continue;                         /* padding rows */
        if (c_label >= 0 && cells[c_label][0] != '\0') {
            char tmp[40];
            field_name(cells[c_label], tmp, sizeof tmp);
            tmp[strcspn(tmp, " ")] = '\0';
            snprintf(label, sizeof label, "%s", tmp);
        }
        struct docrow *r = &rows[nrows++];
        memset(r, 0, sizeof *r);
        char name[40];
        field_name(cells[c_field], name, sizeof name);
        snprintf(r->doc, sizeof r->doc, "%s", doc);
        snprintf(r->table, sizeof r->table, "%.32s#%d", section, ordinal);
        if (c_label >= 0)
            snprintf(r->name, sizeof r->name, "%.15s.%.23s", label, name);
        else
            snprintf(r->name, sizeof r->name, "%s", name);
        snprintf(r->off, sizeof r->off, "%s", cells[c_off]);
        snprintf(r->size, sizeof r->size, "%s", cells[c_size]);
        r->line = lineno;
    }
    fclose(f);
}

int main(void)
{
    const char *src = getenv("UBJ_SRC") ? getenv("UBJ_SRC") : ".";
    parse_doc(src, "FORMAT.md");
    parse_doc(src, "UBJ.md");
    size_t nt;
    const struct fz_field *t = fz_table(&nt);
    for (size_t i = 0; i < nt; i++) {
        int found = 0;
        for (int k = 0; k < nrows; k++) {
            struct docrow *r = &rows[k];
            if (strcmp(r->doc, t[i].doc) || strcmp(r->table, t[i].table) ||
                strcmp(r->name, t[i].name))
                continue;
            found = 1;
            r->used++;
            if (strcmp(r->off, t[i].off) || strcmp(r->size, t[i].size)) {
                printf("%s:%d: %s %s: offset %s size %s; the table says %s %s\n", r->doc,
                       r->line, t[i].st, t[i].name, r->off, r->size, t[i].off, t[i].size);
                problems++;
            }
        }
        if (!found) {
            printf("fields.tsv: %s %s (%s %s) is in no table %s of docs/%s\n", t[i].st,
                   t[i].name, t[i].off, t[i].size, t[i].table, t[i].doc);
            problems++;
        }
        /* the next fixed field of the same structure and kind starts where this ends */
        for (size_t j = i + 1; j < nt && t[i].o >= 0 && t[i].n >= 0; j++) {
            if (strcmp(t[j].st, t[i].st) != 0)
                break;
            const char *di = strchr(t[i].name, '.'), *dj = strchr(t[j].name, '.');
            size_t li = di ? (size_t)(di - t[i].name) : 0, lj = dj ? (size_t)(dj - t[j].name) : 0;
            if (li != lj || strncmp(t[i].name, t[j].name, li) != 0)
                continue;
            if (t[j].o >= 0 && t[j].o != t[i].o + t[i].n) {
                printf("fields.tsv: %s: %s ends at %d, %s starts at %d\n", t[i].st, t[i].name,
                       t[i].o + t[i].n, t[j].name, t[j].o);
                problems++;
            }
            break;
        }
    }
    for (int k = 0; k < nrows; k++) {
        if (rows[k].used == 0) {
            printf("%s:%d: table %s field %s (%s %s) is not in tests/fuzz/fields.tsv\n",
                   rows[k].doc, rows[k].line, rows[k].table, rows[k].name, rows[k].off,
                   rows[k].size);
            problems++;
        } else if (rows[k].used > 1) {
            printf("%s:%d: %s %s matched %d rows\n", rows[k].doc, rows[k].line, rows[k].table,
                   rows[k].name, rows[k].used);
            problems++;
        }
    }
    printf("%zu fields in the table, %d rows in the docs' tables, %d problems\n", nt, nrows,
           problems);
    return problems ? 1 : 0;
}
