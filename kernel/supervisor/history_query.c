/* history_query: the history's queries (history.h): a client's or the
 * worker's request checked, and answered from the database.
 *
 * Every query is one statement with a LIMIT that walks the (session, line)
 * key from the newest, keyed to this workspace's sessions (the session key
 * drives the index, so another workspace's rows are not even read), and stops
 * at the deadline of HISTORY_QUERY_MS: a progress handler, and the search's
 * glob (history_glob.h), look at the clock. While entries wait for a busy
 * file, queries read the views that put them over the file's rows. */
#include "kernel/supervisor/history.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "kernel/util/monotime.h"
#include "kernel/supervisor/history_glob.h"
#include "protocol/errbuf.h"

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
    int rc;
    if (pattern && !json_is_null(pattern)) {
        if (!json_is_string(pattern))
            return errbuf_set(-EINVAL, err, errlen,
                              "history: \"pattern\" must be a glob of at most %d bytes",
                              HISTORY_GLOB_MAX);
        if ((rc = history_glob_check(json_string_value(pattern),
                                     json_string_length(pattern), err, errlen)))
            return rc;
        q->pattern = json_string_value(pattern);
    }
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

/* The statement of q, reading the pending entries too while there are any:
 * ?1 session, ?2 start, ?3 stop, ?4 limit, ?5 pattern, ?6 workspace. */
static void query_sql(const struct history_reader *h, const struct history_query *q,
                      char *sql, size_t len)
{
    const char *in = h->pending ? "h_in" : "main.history";
    const char *out = h->pending ? "h_out" : "main.output_history";
    const char *rid = h->pending ? "rid" : "rowid";
    static const char mine[] = "session IN (SELECT session FROM main.sessions "
                               "WHERE workspace = ?6)";
    char where[512] = "";
    switch (q->access) {
    case HISTORY_TAIL:
        break;
    case HISTORY_RANGE:
        snprintf(where, sizeof where,
                 "AND h.session = ?1 AND h.line >= ?2 AND (?3 <= 0 OR h.line < ?3) ");
        break;
    case HISTORY_SEARCH:
        /* The glob runs on this workspace's cells alone (CASE keeps the order):
         * how long it takes on another's would tell what they hold. */
        if (q->unique)
            snprintf(where, sizeof where,
                     "AND h.%s IN (SELECT max(%s) FROM %s WHERE CASE WHEN %s THEN "
                     "sandpit_glob(?5, source_raw) ELSE 0 END GROUP BY source_raw) ",
                     rid, rid, in, mine);
        else
            snprintf(where, sizeof where,
                     "AND CASE WHEN h.%s THEN sandpit_glob(?5, h.source_raw) ELSE 0 END ",
                     mine);
        break;
    }
    /* Newest first, so that the LIMIT keeps the last entries; reversed after. */
    snprintf(sql, len,
             "SELECT h.session, h.line, h.source_raw, o.output FROM %s AS h "
             "LEFT JOIN %s AS o ON o.session = h.session AND o.line = h.line "
             "WHERE h.%s %sORDER BY h.session DESC, h.line DESC LIMIT ?4",
             in, out, mine, where);
}

/* The rows of st as the reply's entries, newest first: SQLITE_DONE, or the
 * failing result code (rev then holds what came before it). */
static int collect(sqlite3_stmt *st, const struct history_query *q, size_t max_bytes,
                   json_t *rev)
{
    size_t bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bytes +=
            (size_t)sqlite3_column_bytes(st, 2) + (size_t)sqlite3_column_bytes(st, 3);
        if (max_bytes && bytes > max_bytes)
            return SQLITE_DONE;
        json_t *input = text_json(st, 2);
        if (q->output)
            input =
                json_pack("[o, o]", input,
                          sqlite3_column_type(st, 3) == SQLITE_NULL ? json_null()
                                                                    : text_json(st, 3));
        if (json_array_append_new(
                rev, json_pack("[I, I, o]", (json_int_t)sqlite3_column_int64(st, 0),
                               (json_int_t)sqlite3_column_int64(st, 1), input)))
            return SQLITE_NOMEM;
    }
    return rc;
}

/* The session `back` sessions before the current one among this workspace's
 * (others' sessions lie in between when several kernels share the file); 0
 * when there is none. */
static long long session_back(const struct history_reader *h, long long back)
{
    sqlite3_stmt *st = NULL;
    long long found = 0;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT session FROM main.sessions WHERE workspace = ?1 AND "
                           "session < ?2 ORDER BY session DESC LIMIT 1 OFFSET ?3",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, h->workspace, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, h->session);
        sqlite3_bind_int64(st, 3, back - 1);
        if (sqlite3_step(st) == SQLITE_ROW)
            found = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return found;
}

json_t *history_read(const struct history_reader *h, const struct history_query *q,
                     size_t max_entries, size_t max_bytes, char *err, size_t errlen)
{
    long long limit = q->access == HISTORY_RANGE ? -1 : q->n;
    if (max_entries && (limit < 0 || (unsigned long long)limit > max_entries))
        limit = (long long)max_entries;
    if (!h->db) {
        errbuf_set(-EIO, err, errlen, "the history is not available");
        return NULL;
    }
    struct history_glob_clock *clock = h->clock;
    clock->deadline = monotime_now() + HISTORY_QUERY_MS / 1e3;
    clock->expired = false;
    long long session = q->session == 0  ? h->session
                        : q->session > 0 ? q->session
                                         : session_back(h, -q->session);
    char sql[2048];
    query_sql(h, q, sql, sizeof sql);
    sqlite3_stmt *st = NULL;
    json_t *rev = json_array(), *list = NULL;
    int rc = rev ? sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, session);
        sqlite3_bind_int64(st, 2, q->start);
        sqlite3_bind_int64(st, 3, q->stop);
        sqlite3_bind_int64(st, 4, limit);
        sqlite3_bind_text(st, 5, q->pattern ? q->pattern : "*", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, h->workspace, -1, SQLITE_STATIC);
        rc = collect(st, q, max_bytes, rev);
    }
    bool late = clock->expired;
    bool stopped = atomic_load(&clock->stop);
    clock->deadline = 0;
    if (rc == SQLITE_DONE && (list = json_array()))
        for (size_t i = json_array_size(rev); i-- > 0;)
            json_array_append(list, json_array_get(rev, i));
    else if (stopped)
        errbuf_set(-ECANCELED, err, errlen,
                   "the history query was stopped: the kernel is restarting or ending");
    else if (late)
        errbuf_set(-ETIMEDOUT, err, errlen,
                   "the history %s took longer than %d ms and was stopped%s",
                   q->access == HISTORY_SEARCH ? "search" : "query", HISTORY_QUERY_MS,
                   q->access == HISTORY_SEARCH ? ": try a simpler or narrower pattern"
                                               : "");
    else
        errbuf_set(-EIO, err, errlen, "the history cannot be read: %s",
                   rc == SQLITE_NOMEM || !rev ? "out of memory" : sqlite3_errmsg(h->db));
    sqlite3_finalize(st);
    json_decref(rev);
    return list;
}
