/*
 * modes.c -- the subcommands' view of the mode registry (ubjfs/mode.h):
 * the mode lists their help texts and messages print, and the questions
 * they ask about a mode named on the command line.  No subcommand spells
 * a list of modes; they all come from here.
 */
#include <string.h>
#include "tools.h"

#define MODES_MAX 32u

/* tools_mode_names -- see tools.h. */
const char *tools_mode_names(unsigned flags, int need, enum ubj_mode_order order,
                             const char *sep, const char *last, char *buf, size_t len)
{
    const struct ubj_mode_info *v[MODES_MAX], *w[MODES_MAX];
    size_t n = ubj_mode_list(flags, order, v, MODES_MAX), k = 0;
    for (size_t i = 0; i < n && i < MODES_MAX; i++)
        if (need < 0 || v[i]->needs == (enum ubj_mode_need)need)
            w[k++] = v[i];
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k && at < len; i++) {
        const char *s = i == 0 ? "" : i + 1 == k ? last : sep;
        int m = snprintf(buf + at, len - at, "%s%s", s, w[i]->name);
        at += m > 0 ? (size_t)m : 0;
    }
    return buf;
}

/* tools_mode_needs -- see tools.h. */
bool tools_mode_needs(const char *name, enum ubj_mode_need need)
{
    const struct ubj_mode_info *m = ubj_mode_lookup(name);
    return m != NULL && m->needs == need;
}

/* tools_wrap -- see tools.h. */
void tools_wrap(FILE *f, const char *text, size_t col, size_t indent, size_t width)
{
    const char *p = text;
    bool first = true;
    while (*p != '\0') {
        size_t n = strcspn(p, " ");
        if (!first && col + 1 + n > width) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, n, f);
        col += n;
        first = false;
        p += n;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}
