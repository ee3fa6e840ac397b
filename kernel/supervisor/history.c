/* history: the cells of every kernel of a user, in one SQLite database.
 *
 * The database has IPython's tables (sessions, history, output_history), so
 * that the tools that read IPython's history read it too. Many kernels write
 * to it at once: it is in WAL mode, where readers never wait for the writer
 * and each cell is a transaction of one row, and a writer waits for another's
 * transaction at most HISTORY_BUSY_MS.
 *
 * What is hard:
 * - The supervisor must not block. A write that waits longer than the busy
 *   timeout, or fails in any other way (a corrupt file, a read-only one, a
 *   full disk), gives the database up: the history goes on in memory, with
 *   the session's cells so far when they can still be read, and the log says
 *   so once. The kernel keeps serving; only persistence is lost.
 * - Nothing is quadratic. Every query is one statement with a LIMIT that walks
 *   the (session, line) key from the newest; a unique search keeps the latest
 *   row of each input with a GROUP BY, so a search of 20,000 cells is one scan
 *   and a sort.
 * - Session numbers are the sessions table's AUTOINCREMENT, never reused, as
 *   in IPython; "range" takes session 0 as the current one and negative
 *   numbers back from it (another kernel's session may lie in between, as it
 *   does in IPython).
 *
 * sandpit keeps the input as the client sent it: source and source_raw hold
 * the same text (IPython's "translated" input is the worker's business). */
#include "kernel/supervisor/history.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/fsutil.h"
#include "kernel/log.h"
#include "protocol/errbuf.h"

#define HISTORY_BUSY_MS 1000 /* longest wait for another kernel's write */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS sessions (session INTEGER PRIMARY KEY AUTOINCREMENT,"
    " start TIMESTAMP, end TIMESTAMP, num_cmds INTEGER, remark TEXT);"
    "CREATE TABLE IF NOT EXISTS history (session INTEGER, line INTEGER, source TEXT,"
    " source_raw TEXT, PRIMARY KEY (session, line));"
    "CREATE TABLE IF NOT EXISTS output_history (session INTEGER, line INTEGER,"
    " output TEXT, PRIMARY KEY (session, line));";

#define NOW "strftime('%Y-%m-%d %H:%M:%f', 'now', 'localtime')"

int history_default_path(char *out, size_t len)
{
    char dir[PATH_MAX];
    int rc = fsutil_jupyter_data_dir(dir, sizeof dir);
    if (rc)
        return rc;
    int n = snprintf(out, len, "%s/%s", dir, HISTORY_FILE);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Runs a statement with up to two whole numbers (?1, ?2) and two texts (?3,
 * ?4; NULL binds null). SQLITE_DONE or another result code, with the
 * database's sentence in why. */
static int run(sqlite3 *db, const char *sql, long long a, long long b, const char *s,
               const char *t, char *why, size_t whylen)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, a);
        sqlite3_bind_int64(st, 2, b);
        if (s)
            sqlite3_bind_text(st, 3, s, -1, SQLITE_STATIC);
        if (t)
            sqlite3_bind_text(st, 4, t, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        snprintf(why, whylen, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

/* The statements of each cell, prepared on first use and kept with the
 * database (history_add, history_set_output). */
enum { WRITE_INPUT, WRITE_OUTPUT };
static const char *const write_sql[] = {
    [WRITE_INPUT] = "INSERT OR REPLACE INTO history (session, line, source, source_raw) "
                    "VALUES (?1, ?2, ?3, ?3)",
    [WRITE_OUTPUT] = "INSERT OR REPLACE INTO output_history (session, line, output) "
                     "VALUES (?1, ?2, ?3)",
};

static void finalize_writes(struct history *h)
{
    for (size_t i = 0; i < sizeof h->writes / sizeof *h->writes; i++) {
        sqlite3_finalize(h->writes[i]);
        h->writes[i] = NULL;
    }
}

/* Closes h->db with its prepared statements. */
static void close_db(struct history *h)
{
    finalize_writes(h);
    sqlite3_close(h->db);
    h->db = NULL;
}

/* Runs one of write_sql with session, line and text: SQLITE_DONE or another
 * result code, with the database's sentence in why. */
static int run_write(struct history *h, int which, long long line, const char *text,
                     char *why, size_t whylen)
{
    sqlite3_stmt **st = &h->writes[which];
    int rc = *st ? SQLITE_OK
                 : sqlite3_prepare_v3(h->db, write_sql[which], -1,
                                      SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(*st, 1, h->session);
        sqlite3_bind_int64(*st, 2, line);
        sqlite3_bind_text(*st, 3, text, -1, SQLITE_STATIC);
        rc = sqlite3_step(*st);
        sqlite3_reset(*st);
        sqlite3_clear_bindings(*st);
    }
    if (rc != SQLITE_DONE)
        snprintf(why, whylen, "%s", sqlite3_errmsg(h->db));
    return rc;
}

/* Opens path (NULL: memory) with the schema in place. SQLITE_OK or a result
 * code with why; *db is NULL on failure. */
static int open_db(const char *path, sqlite3 **db, char *why, size_t whylen)
{
    int rc = sqlite3_open_v2(
        path ? path : ":memory:", db,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(*db, HISTORY_BUSY_MS);
        /* WAL where the file system allows it; otherwise SQLite keeps its
         * rollback journal, which is slower for readers but as safe. */
        rc = sqlite3_exec(
            *db, path ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" : "", NULL,
            NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db, schema, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(why, whylen, "%s", *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
        sqlite3_close(*db);
        *db = NULL;
    }
    return rc;
}

/* A new row in sessions: number (0: the next one) in h->session. */
static int begin_session(struct history *h, long long number, char *why, size_t whylen)
{
    int rc = number > 0 ? run(h->db,
                              "INSERT INTO sessions (session, start, num_cmds) "
                              "VALUES (?1, " NOW ", 0)",
                              number, 0, NULL, NULL, why, whylen)
                        : run(h->db,
                              "INSERT INTO sessions (start, num_cmds) "
                              "VALUES (" NOW ", 0)",
                              0, 0, NULL, NULL, why, whylen);
    if (rc == SQLITE_DONE)
        h->session = sqlite3_last_insert_rowid(h->db);
    return rc;
}

static void end_session(struct history *h)
{
    char why[256];
    run(h->db,
        "UPDATE sessions SET end = " NOW ", num_cmds = "
        "(SELECT count(*) FROM history WHERE session = ?1) WHERE session = ?1",
        h->session, 0, NULL, NULL, why, sizeof why);
}

/* A history in memory, numbering on from session (0: from 1). */
static int use_memory(struct history *h, long long session)
{
    char why[256];
    if (open_db(NULL, &h->db, why, sizeof why) != SQLITE_OK ||
        begin_session(h, session, why, sizeof why) != SQLITE_DONE) {
        log_error("history: cannot keep it even in memory: %s", why);
        close_db(h);
        return -ENOMEM;
    }
    return 0;
}

int history_open(struct history *h, const char *path)
{
    memset(h, 0, sizeof *h);
    if (!path)
        return use_memory(h, 0);
    char dir[PATH_MAX], why[512] = "";
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        fsutil_mkdir_p(dir, 0700); /* if it fails, opening says why */
    }
    struct stat st;
    bool fresh = stat(path, &st) != 0;
    if (open_db(path, &h->db, why, sizeof why) == SQLITE_OK &&
        begin_session(h, 0, why, sizeof why) == SQLITE_DONE) {
        /* Cells hold what users type, secrets too: a new database is theirs
         * alone (its journal files take its mode). */
        if (fresh)
            chmod(path, 0600);
        if ((h->path = strdup(path)))
            return 0;
        snprintf(why, sizeof why, "out of memory");
    }
    log_warn("history: cannot use %s (%s): this kernel keeps its history in memory, "
             "where it does not outlive the kernel",
             path, why);
    close_db(h);
    return use_memory(h, 0);
}

void history_close(struct history *h)
{
    if (h->db) {
        end_session(h);
        close_db(h);
    }
    free(h->path);
    memset(h, 0, sizeof *h);
}

/* The file failed a write: the history goes on in memory, with this
 * session's cells as far as the file still gives them. */
static void give_up_file(struct history *h, const char *why)
{
    log_warn("history: writing to %s failed (%s): this kernel keeps its history in "
             "memory from now on, where it does not outlive the kernel",
             h->path, why);
    finalize_writes(h);
    sqlite3 *old = h->db;
    h->db = NULL;
    free(h->path);
    h->path = NULL;
    if (use_memory(h, h->session) == 0) {
        sqlite3_stmt *st = NULL;
        char ignored[256];
        if (sqlite3_prepare_v2(old,
                               "SELECT line, source_raw FROM history WHERE session = ?1",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, h->session);
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *src = (const char *)sqlite3_column_text(st, 1);
                run_write(h, WRITE_INPUT, sqlite3_column_int64(st, 0), src ? src : "",
                          ignored, sizeof ignored);
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(old);
}

/* A write: on the file's failure, given up for memory and tried there. */
static int write_row(struct history *h, int which, long long line, const char *text)
{
    char why[256];
    if (!h->db)
        return -ENOMEM;
    int rc = run_write(h, which, line, text, why, sizeof why);
    if (rc != SQLITE_DONE && h->path) {
        give_up_file(h, why);
        if (!h->db)
            return -ENOMEM;
        rc = run_write(h, which, line, text, why, sizeof why);
    }
    if (rc != SQLITE_DONE) {
        log_debug("history: %s", why);
        return -EIO;
    }
    return 0;
}

void history_new_session(struct history *h)
{
    char why[256];
    if (!h->db)
        return;
    end_session(h);
    if (begin_session(h, 0, why, sizeof why) != SQLITE_DONE) {
        if (h->path) {
            h->session++; /* numbering goes on in memory */
            give_up_file(h, why);
        } else {
            log_warn("history: cannot begin a new session: %s", why);
        }
    }
}

int history_add(struct history *h, int line, const char *input)
{
    return write_row(h, WRITE_INPUT, line, input);
}

int history_set_output(struct history *h, int line, const char *output)
{
    return write_row(h, WRITE_OUTPUT, line, output);
}

/* --- queries ----------------------------------------------------------------------- */

/* A whole number field in [min, max], or dflt when absent or null. */
static int get_int(const json_t *c, const char *key, long long min, long long max,
                   long long dflt, long long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(c, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return errbuf_set(-EINVAL, err, errlen,
                          "history: \"%s\" must be a whole number from %lld to %lld", key,
                          min, max);
    *out = json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *c, const char *key, bool *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(c, key);
    *out = json_is_true(v);
    if (v && !json_is_null(v) && !json_is_boolean(v))
        return errbuf_set(-EINVAL, err, errlen, "history: \"%s\" must be true or false",
                          key);
    return 0;
}

int history_query_parse(const json_t *c, struct history_query *q, char *err,
                        size_t errlen)
{
    memset(q, 0, sizeof *q);
    if (!json_is_object(c))
        return errbuf_set(-EINVAL, err, errlen, "history: the query is not an object");
    json_t *type = json_object_get(c, "hist_access_type");
    const char *t = json_string_value(type);
    if (!type || json_is_null(type) || (t && strcmp(t, "tail") == 0))
        q->access = HISTORY_TAIL;
    else if (t && strcmp(t, "range") == 0)
        q->access = HISTORY_RANGE;
    else if (t && strcmp(t, "search") == 0)
        q->access = HISTORY_SEARCH;
    else
        return errbuf_set(-EINVAL, err, errlen,
                          "history: \"hist_access_type\" must be tail, range or search");
    json_t *pattern = json_object_get(c, "pattern");
    q->pattern = "*";
    if (pattern && !json_is_null(pattern)) {
        if (!json_is_string(pattern) ||
            json_string_length(pattern) > HISTORY_PATTERN_MAX ||
            strlen(json_string_value(pattern)) != json_string_length(pattern))
            return errbuf_set(-EINVAL, err, errlen,
                              "history: \"pattern\" must be a glob of at most %d "
                              "characters",
                              HISTORY_PATTERN_MAX);
        q->pattern = json_string_value(pattern);
    }
    int rc;
    if ((rc = get_bool(c, "output", &q->output, err, errlen)) ||
        (rc = get_bool(c, "raw", &q->raw, err, errlen)) ||
        (rc = get_bool(c, "unique", &q->unique, err, errlen)) ||
        (rc = get_int(c, "session", -INT_MAX, INT_MAX, 0, &q->session, err, errlen)) ||
        (rc = get_int(c, "start", 0, INT_MAX, 1, &q->start, err, errlen)) ||
        (rc = get_int(c, "stop", 0, INT_MAX, 0, &q->stop, err, errlen)) ||
        (rc = get_int(c, "n", 0, INT_MAX, q->access == HISTORY_SEARCH ? -1 : 10, &q->n,
                      err, errlen)))
        return rc;
    return 0;
}

/* A JSON string of text from the database, which is the user's file: text
 * that is not UTF-8 becomes "". */
static json_t *text_json(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    json_t *j = s ? json_stringn(s, (size_t)sqlite3_column_bytes(st, col)) : NULL;
    return j ? j : json_string("");
}

json_t *history_query(struct history *h, const struct history_query *q,
                      size_t max_entries, size_t max_bytes, char *err, size_t errlen)
{
    /* Newest first, so that the LIMIT keeps the last entries; reversed below. */
    static const char head[] =
        "SELECT h.session, h.line, h.source_raw, o.output FROM history AS h "
        "LEFT JOIN output_history AS o ON o.session = h.session AND o.line = h.line ";
    static const char tail[] = "ORDER BY h.session DESC, h.line DESC LIMIT ?4";
    const char *where = "";
    long long limit = -1, session = 0;
    switch (q->access) {
    case HISTORY_TAIL:
        limit = q->n;
        break;
    case HISTORY_RANGE:
        session = q->session <= 0 ? q->session + h->session : q->session;
        where = "WHERE h.session = ?1 AND h.line >= ?2 AND (?3 <= 0 OR h.line < ?3) ";
        break;
    case HISTORY_SEARCH:
        limit = q->n;
        where = q->unique ? "WHERE h.rowid IN (SELECT max(rowid) FROM history "
                            "WHERE source_raw GLOB ?5 GROUP BY source_raw) "
                          : "WHERE h.source_raw GLOB ?5 ";
        break;
    }
    if (max_entries && (limit < 0 || (unsigned long long)limit > max_entries))
        limit = (long long)max_entries;
    if (!h->db) {
        errbuf_set(-EIO, err, errlen, "the history is not available");
        return NULL;
    }
    char sql[sizeof head + sizeof tail + 256];
    snprintf(sql, sizeof sql, "%s%s%s", head, where, tail);
    sqlite3_stmt *st = NULL;
    json_t *rev = json_array(), *list = NULL;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, session);
        sqlite3_bind_int64(st, 2, q->start);
        sqlite3_bind_int64(st, 3, q->stop);
        sqlite3_bind_int64(st, 4, limit);
        sqlite3_bind_text(st, 5, q->pattern ? q->pattern : "*", -1, SQLITE_STATIC);
    }
    size_t bytes = 0;
    while (rc == SQLITE_OK && rev && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bytes +=
            (size_t)sqlite3_column_bytes(st, 2) + (size_t)sqlite3_column_bytes(st, 3);
        if (max_bytes && bytes > max_bytes) {
            rc = SQLITE_DONE;
            break;
        }
        json_t *input = text_json(st, 2);
        if (q->output)
            input =
                json_pack("[o, o]", input,
                          sqlite3_column_type(st, 3) == SQLITE_NULL ? json_null()
                                                                    : text_json(st, 3));
        json_array_append_new(
            rev, json_pack("[I, I, o]", (json_int_t)sqlite3_column_int64(st, 0),
                           (json_int_t)sqlite3_column_int64(st, 1), input));
        rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE && rev && (list = json_array()))
        for (size_t i = json_array_size(rev); i-- > 0;)
            json_array_append(list, json_array_get(rev, i));
    else
        errbuf_set(-EIO, err, errlen, "the history cannot be read: %s",
                   rev ? sqlite3_errmsg(h->db) : "out of memory");
    sqlite3_finalize(st);
    json_decref(rev);
    return list;
}
