/* history_glob: SQLite's GLOB, bounded in time (history_glob.h).
 *
 * SQLite's own GLOB backtracks at every '*' and cannot be stopped inside one
 * call: "*" followed by 1,300 classes against a 1 MB cell costs it about ten
 * seconds for that one row, and a progress handler is not called until the
 * call returns. This matcher keeps one backtracking point, the last '*' (which
 * is enough, since every other item matches exactly one character), so it
 * costs at most the text's length times the pattern's; it counts its steps and
 * looks at the clock every few thousand of them, so that a match gives up at
 * the query's deadline wherever it is.
 *
 * Characters are UTF-8 code points, as in SQLite; a byte that does not begin
 * a valid sequence counts as one character of its own value. */
#include "kernel/supervisor/history_glob.h"

#include <errno.h>
#include <sqlite3.h>
#include <string.h>

#include "kernel/util/monotime.h"
#include "protocol/errbuf.h"

#define CLOCK_EVERY 4096 /* steps between two looks at the clock */

int history_glob_check(const char *pattern, size_t len, char *err, size_t errlen)
{
    if (len > HISTORY_GLOB_MAX || memchr(pattern, 0, len))
        return errbuf_set(-EINVAL, err, errlen,
                          "history: \"pattern\" must be a glob of at most %d bytes",
                          HISTORY_GLOB_MAX);
    size_t items = 0;
    for (size_t i = 0; i < len; i++)
        items += pattern[i] == '*' || pattern[i] == '?' || pattern[i] == '[';
    if (items > HISTORY_GLOB_ITEMS)
        return errbuf_set(-EINVAL, err, errlen,
                          "history: \"pattern\" has %zu wildcards and classes; a "
                          "search takes at most %d",
                          items, HISTORY_GLOB_ITEMS);
    return 0;
}

/* The code point at *s, and s moved past it. */
static unsigned next_char(const unsigned char **s)
{
    const unsigned char *p = *s;
    unsigned c = *p++;
    int more = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    if (c >= 0xf8)
        more = 0;
    unsigned v = more == 3 ? c & 7 : more == 2 ? c & 15 : more == 1 ? c & 31 : c;
    for (int i = 0; i < more; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            *s += 1;
            return c;
        }
        v = v << 6 | (p[i] & 0x3f);
    }
    *s = p + more;
    return v;
}

/* Does the class at *p ('[' already passed) hold c? *p moves past its ']';
 * -1 if the class is not closed (then nothing matches, as in SQLite). */
static int in_class(const unsigned char **p, unsigned c)
{
    const unsigned char *q = *p;
    bool negate = *q == '^', seen = false;
    if (negate)
        q++;
    unsigned prev = 0;
    bool first = true;
    while (*q && (first || *q != ']')) {
        if (*q == '-' && !first && q[1] && q[1] != ']' && prev) {
            q++;
            unsigned hi = next_char(&q);
            seen = seen || (c >= prev && c <= hi);
            prev = 0;
        } else {
            prev = next_char(&q);
            seen = seen || c == prev;
        }
        first = false;
    }
    if (!*q)
        return -1;
    *p = q + 1;
    return seen != negate;
}

/* Does the one-character item at *p match c? *p moves past it; -1 when the
 * pattern is broken. */
static int item_matches(const unsigned char **p, unsigned c)
{
    if (**p == '?') {
        (*p)++;
        return 1;
    }
    if (**p == '[') {
        (*p)++;
        return in_class(p, c);
    }
    return next_char(p) == c;
}

bool history_glob_clock_up(struct history_glob_clock *c)
{
    if (atomic_load_explicit(&c->stop, memory_order_relaxed))
        return true;
    if (c->deadline > 0 && monotime_now() > c->deadline) {
        c->expired = true;
        return true;
    }
    return false;
}

int history_glob_match(const char *pattern, const char *text,
                       struct history_glob_clock *clock)
{
    const unsigned char *p = (const unsigned char *)pattern;
    const unsigned char *s = (const unsigned char *)text;
    const unsigned char *star_p = NULL, *star_s = NULL;
    unsigned long steps = 0, look = CLOCK_EVERY;
    while (*s) {
        if (++steps >= look) {
            look = steps + CLOCK_EVERY;
            if (clock && history_glob_clock_up(clock))
                return -ETIMEDOUT;
        }
        if (*p == '*') {
            while (*p == '*')
                p++;
            if (!*p)
                return 1;
            star_p = p;
            star_s = s;
            continue;
        }
        const unsigned char *after_p = p, *after_s = s;
        int m = *p ? item_matches(&after_p, next_char(&after_s)) : 0;
        if (m < 0)
            return 0;
        steps += (unsigned long)(after_p - p) / 16; /* a long class costs more */
        if (m) {
            p = after_p;
            s = after_s;
            continue;
        }
        if (!star_p)
            return 0;
        /* The last '*' takes one more character, and the rest is tried again. */
        next_char(&star_s);
        p = star_p;
        s = star_s;
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

static void glob_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *pattern = (const char *)sqlite3_value_text(argv[0]);
    const char *text = (const char *)sqlite3_value_text(argv[1]);
    if (!pattern || !text) {
        sqlite3_result_null(ctx);
        return;
    }
    int m = history_glob_match(pattern, text, sqlite3_user_data(ctx));
    if (m < 0)
        sqlite3_result_error(ctx, "the search ran past its time", -1);
    else
        sqlite3_result_int(ctx, m);
}

int history_glob_register(struct sqlite3 *db, struct history_glob_clock *clock)
{
    return sqlite3_create_function(db, "sandpit_glob", 2,
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC, clock, glob_sql,
                                   NULL, NULL) == SQLITE_OK
               ? 0
               : -EIO;
}
