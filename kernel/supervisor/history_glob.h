/* history_glob: the history search's glob, SQLite's GLOB rules (*, ?, [...]
 * with ranges and ^) in a matcher that counts its steps and stops at a
 * deadline, so that no pattern and no cell, however large, holds the
 * supervisor's loop. Registered on a history database as sandpit_glob(pattern,
 * text). Patterns and texts are borrowed. */
#ifndef SANDPIT_HISTORY_GLOB_H
#define SANDPIT_HISTORY_GLOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sqlite3;

#define HISTORY_GLOB_MAX   1024 /* longest pattern, in bytes */
#define HISTORY_GLOB_ITEMS 64   /* most wildcards and classes (*, ?, [) in one */

/* 0 if pattern (len bytes) is a glob a search accepts: at most
 * HISTORY_GLOB_MAX bytes, no NUL, at most HISTORY_GLOB_ITEMS wildcards and
 * classes; else -EINVAL with a sentence in err. */
int history_glob_check(const char *pattern, size_t len, char *err, size_t errlen);

/* The deadline a query's matches stop at (monotime_now's clock; 0: none), and
 * whether a match was stopped by it since the last call with a new deadline;
 * stop, which another thread may set, stops the query at once too. */
struct history_glob_clock {
    double deadline;
    bool expired;
    atomic_bool stop;
};

/* Whether a query on c must stop now: stop is set, or the deadline has
 * passed (c->expired is then set). */
bool history_glob_clock_up(struct history_glob_clock *c);

/* 1 if text matches pattern, 0 if not, -ETIMEDOUT once clock is up
 * (history_glob_clock_up). clock may be NULL: no deadline. */
int history_glob_match(const char *pattern, const char *text,
                       struct history_glob_clock *clock);

/* Registers sandpit_glob(pattern, text) on db, with clock (borrowed for the
 * database's life): a match past the deadline is an SQL error. 0 or -EIO. */
int history_glob_register(struct sqlite3 *db, struct history_glob_clock *clock);

#endif
