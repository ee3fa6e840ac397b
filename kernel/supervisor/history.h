/* history: the inputs (and text outputs) of executed cells, kept by the
 * supervisor in an SQLite database of the user's, so that they outlive the
 * worker and the kernel's process: a restarted kernel is a new process, and
 * its clients still ask for the earlier sessions. Each session is its
 * workspace's, and a kernel's queries see its own workspace's sessions alone.
 * Numbered as IPython numbers them: a session per kernel start (or in-place
 * restart), line numbers from 1 within it. The history owns its database;
 * queries return new JSON (caller releases). */
#ifndef SANDPIT_HISTORY_H
#define SANDPIT_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/supervisor/history_glob.h"

#define HISTORY_FILE          "sandpit/history.sqlite" /* in the Jupyter data folder */
#define HISTORY_QUERY_MS      1000        /* the longest a query may run (its thread) */
#define HISTORY_JOBS_MAX      8           /* queries asked and not yet answered */
#define HISTORY_PENDING_MAX   1000        /* most writes that wait for a busy file */
#define HISTORY_PENDING_BYTES (16u << 20) /* and their text */

struct sqlite3;
struct sqlite3_stmt;
struct history_thread;
struct history_later;

struct history {
    /* history.c's, set at open, for history_thread.c (which history.c calls:
     * the thread reaches back only through these): the waiting entries tried
     * again, and the writes that waited while db was lent written now. */
    void (*retry)(struct history *h);
    void (*write_later)(struct history *h);
    struct sqlite3 *db;
    struct sqlite3_stmt *writes[4]; /* the per-cell writes, prepared once */
    char *path;        /* the database's file; NULL once it is kept in memory */
    char *workspace;   /* the key of this kernel's sessions: its real path */
    long long session; /* the current session's number, from 1 */
    size_t pending, pending_bytes;   /* the writes that wait for a busy file */
    double pending_since, retry_at;  /* monotime_now's clock */
    bool pending_said;               /* the log has said that they wait */
    struct history_glob_clock clock; /* the deadline of a query on db */
    int folder; /* the database's folder, an O_PATH descriptor + 1; 0: none */
    /* The query thread (history_thread.c), from the first query on. While
     * `lent` of its queries use db (a history in memory, or entries waiting),
     * the loop leaves db alone: writes wait in `later`, in order. */
    struct history_thread *thread;
    unsigned lent;
    struct history_later *later, **later_tail;
    size_t nlater, later_bytes;
    bool later_said; /* the log has said that writes were dropped */
};

enum history_access { HISTORY_TAIL, HISTORY_RANGE, HISTORY_SEARCH };

/* A history_request's content, checked (history_query_parse). */
struct history_query {
    enum history_access access;
    bool output;         /* each entry's input comes with its output: [input, output] */
    bool raw;            /* the input as typed (sandpit keeps only that: both are it) */
    bool unique;         /* search: each input once, its latest occurrence */
    long long session;   /* range: 0 is the current one, negative counts back */
    long long start;     /* range: the first line */
    long long stop;      /* range: the line after the last; 0: to the end */
    long long n;         /* tail and search: the last n; -1: search without limit */
    const char *pattern; /* search: a glob on the whole input (borrowed) */
};

/* Opens the database at path and begins a new session in it, of workspace
 * (its real path; copied); path NULL keeps the history in memory (--history
 * off), for this process alone. A database that cannot be used at the start
 * (corrupt, locked beyond a second, not writable) leaves the history in memory
 * too, and the log says so once. 0, or -ENOMEM when not even memory would do. */
int history_open(struct history *h, const char *path, const char *workspace);
/* Writes what waits (waiting up to a second: the loop has ended), ends the
 * session (its end time) and closes the database. */
void history_close(struct history *h);
/* Tries again to write the entries that found the file busy, at most every
 * quarter of a second (each try waits at most a few milliseconds); the loop
 * calls it at each turn. */
void history_retry(struct history *h);

/* Where the database's folder is now, in out: found by its descriptor, not
 * by the path it had, so that a folder moved (renamed above it) is still the
 * one each new worker hides. 0, or -ENOENT (no file, or the folder is gone). */
int history_folder(const struct history *h, char *out, size_t len);

/* The default database, HISTORY_FILE in the user's Jupyter data folder.
 * 0 or -errno (no HOME, too long). */
int history_default_path(char *out, size_t len);

/* Ends the current session and begins the next one (an in-place restart). */
void history_new_session(struct history *h);

/* Records an input as line `line` of the current session. 0 or -errno; one
 * the file is too busy to take waits in memory and is written later (at most
 * HISTORY_PENDING_MAX of them); a database that fails to take it otherwise is
 * given up for memory (said once). */
int history_add(struct history *h, int line, const char *input);
/* Records the text output of a line of the current session (replacing any). */
int history_set_output(struct history *h, int line, const char *output);

/* Checks a history_request's content (or the query of a worker's history
 * frame) into q, whose pattern is then borrowed from content. A field may be
 * absent or null (its default: tail, n 10, session 0, start 1, to the end,
 * search "*" without limit); one of the wrong type or out of range is an
 * error: -EINVAL with a sentence in err. */
int history_query_parse(const json_t *content, struct history_query *q, char *err,
                        size_t errlen);

/* What a query reads: a connection (used by one thread at a time), its
 * clock (registered on it), this kernel's workspace and current session, and
 * whether entries wait (the views that put them over the file's). */
struct history_reader {
    struct sqlite3 *db;
    struct history_glob_clock *clock;
    const char *workspace;
    long long session;
    bool pending;
};

/* history_query on r, in the caller's thread (history_query.c). */
json_t *history_read(const struct history_reader *r, const struct history_query *q,
                     size_t max_entries, size_t max_bytes, char *err, size_t errlen);

/* Answers q with the reply's "history" list, in execution order: a new JSON
 * array of [session, line, input] (input [input, output] with q->output), of
 * this workspace's sessions only, or NULL with a sentence in err (one that
 * says so for a query stopped at HISTORY_QUERY_MS). At most max_entries
 * entries and about max_bytes of text (0: no bound) are given: the newest. */
json_t *history_query(struct history *h, const struct history_query *q,
                      size_t max_entries, size_t max_bytes, char *err, size_t errlen);

/* A query's answer, in the loop's thread: the list (taken over) or NULL with
 * the sentence err; both NULL when the history closes before it is answered
 * (ctx and arg are then only to be released). */
typedef void history_done_fn(void *ctx, void *arg, json_t *list, const char *err);

/* Asks q (copied) of the query thread, as history_query would answer it, so
 * that the loop never waits on it: done(ctx, arg, ...) is called from
 * history_collect, in the order of the queries. The thread reads the file on
 * a read-only connection of its own; a history in memory, or one whose
 * entries wait for a busy file, is read on db itself, which the loop leaves
 * to the thread until the answer is collected. 0, -EBUSY with
 * HISTORY_JOBS_MAX queries asked already, -ENOMEM (err says why). */
int history_submit(struct history *h, const struct history_query *q, size_t max_entries,
                   size_t max_bytes, history_done_fn *done, void *ctx, void *arg,
                   char *err, size_t errlen);
/* The descriptor that is readable when answers wait for history_collect
 * (for the loop to watch), or -1 before the first history_submit. */
int history_event_fd(const struct history *h);
/* Calls done for each answered query, in order. */
void history_collect(struct history *h);
/* Queries asked and not yet collected. */
size_t history_asked(const struct history *h);

#endif
