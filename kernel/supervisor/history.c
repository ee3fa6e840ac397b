/* history: the cells of every kernel of a user, in one SQLite database, each
 * kernel seeing its own workspace's alone.
 *
 * The database has IPython's tables (sessions, history, output_history), so
 * that the tools that read IPython's history read it too, and one column more:
 * sessions.workspace, the real path of the session's workspace. Every query
 * keeps to the sessions of the kernel's workspace; the rows of a database made
 * before the column (workspace null) belong to no workspace and are never
 * returned. Many kernels write to it at once: it is in WAL mode, where readers
 * never wait for the writer and each cell is a transaction of one row.
 *
 * What is hard:
 * - The supervisor's loop must not wait on the file. Once open, a write
 *   waits for another process's transaction at most HISTORY_BUSY_MS (at the
 *   start, at a restart in place and at the end, a statement may wait
 *   HISTORY_OPEN_BUSY_MS); one that still finds the
 *   database busy waits in memory (an attached in-memory database, "pending",
 *   which every query reads with the file) and is written at the next write,
 *   query or retry, in order; the log says so when it lasts. Only a queue past
 *   HISTORY_PENDING_MAX, or a write that fails in any other way (a corrupt
 *   file, a read-only one, a full disk), gives the database up: the history
 *   goes on in memory, with the session's cells so far, and the log says so
 *   once. The kernel keeps serving; only persistence is lost.
 * - No query holds the loop: each runs on the history's thread
 *   (history_thread.c), with a deadline of HISTORY_QUERY_MS, which a progress
 *   handler and the search's own glob (history_glob.h) both keep; a query
 *   past it is an error that says so, not a partial answer (a search that
 *   stopped half-way would look like one that found nothing more). While a
 *   query reads db itself (in memory, or entries waiting), the loop leaves it
 *   alone: writes wait in a list ("later"), in order.
 * - Nothing is quadratic. Every query is one statement with a LIMIT that walks
 *   the (session, line) key from the newest; a unique search keeps the latest
 *   row of each input with a GROUP BY, so a search of 20,000 cells is one scan
 *   and a sort.
 * - Session numbers are the sessions table's AUTOINCREMENT, never reused, as
 *   in IPython; "range" takes session 0 as the current one and negative
 *   numbers back from it among this workspace's sessions (another kernel's
 *   may lie in between, which IPython would count).
 *
 * sandpit keeps the input as the client sent it: source and source_raw hold
 * the same text (IPython's "translated" input is the worker's business). */
#include "kernel/supervisor/history.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/supervisor/history_glob.h"
#include "kernel/supervisor/history_thread.h"
#include "protocol/errbuf.h"

#define HISTORY_OPEN_BUSY_MS 1000 /* at the start and the end, outside the loop */
#define HISTORY_BUSY_MS      10   /* in the loop: longest wait for another's write */
#define HISTORY_RETRY_S      0.25 /* between two tries of the pending cells */
#define HISTORY_SAY_S        1.0  /* how long cells wait before the log says so */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS sessions (session INTEGER PRIMARY KEY AUTOINCREMENT,"
    " start TIMESTAMP, end TIMESTAMP, num_cmds INTEGER, remark TEXT);"
    "CREATE TABLE IF NOT EXISTS history (session INTEGER, line INTEGER, source TEXT,"
    " source_raw TEXT, PRIMARY KEY (session, line));"
    "CREATE TABLE IF NOT EXISTS output_history (session INTEGER, line INTEGER,"
    " output TEXT, PRIMARY KEY (session, line));";

/* The writes that found the file busy, and what queries read: the file's rows
 * with the pending ones over them. rid orders inputs as rowid does. */
static const char pending_schema[] =
    "ATTACH ':memory:' AS pending;"
    "CREATE TABLE pending.history (session INTEGER, line INTEGER, source TEXT,"
    " source_raw TEXT, PRIMARY KEY (session, line));"
    "CREATE TABLE pending.output_history (session INTEGER, line INTEGER,"
    " output TEXT, PRIMARY KEY (session, line));"
    "CREATE TEMP VIEW h_in AS SELECT m.rowid AS rid, m.session, m.line, m.source_raw"
    " FROM main.history AS m WHERE NOT EXISTS (SELECT 1 FROM pending.history AS p"
    " WHERE p.session = m.session AND p.line = m.line) UNION ALL"
    " SELECT rowid + (1 << 62), session, line, source_raw FROM pending.history;"
    "CREATE TEMP VIEW h_out AS SELECT m.session, m.line, m.output"
    " FROM main.output_history AS m WHERE NOT EXISTS (SELECT 1 FROM"
    " pending.output_history AS p WHERE p.session = m.session AND p.line = m.line)"
    " UNION ALL SELECT session, line, output FROM pending.output_history;";

static const char flush_sql[] =
    "BEGIN IMMEDIATE;"
    "INSERT OR REPLACE INTO main.history SELECT session, line, source, source_raw"
    " FROM pending.history ORDER BY rowid;"
    "INSERT OR REPLACE INTO main.output_history SELECT session, line, output"
    " FROM pending.output_history ORDER BY rowid;"
    "DELETE FROM pending.history; DELETE FROM pending.output_history; COMMIT;";

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
 * database (history_add, history_set_output), and their pending twins. */
enum { WRITE_INPUT, WRITE_OUTPUT, WRITE_PENDING_INPUT, WRITE_PENDING_OUTPUT };
static const char *const write_sql[] = {
    [WRITE_INPUT] = "INSERT OR REPLACE INTO main.history (session, line, source, "
                    "source_raw) VALUES (?1, ?2, ?3, ?3)",
    [WRITE_OUTPUT] = "INSERT OR REPLACE INTO main.output_history (session, line, "
                     "output) VALUES (?1, ?2, ?3)",
    [WRITE_PENDING_INPUT] = "INSERT OR REPLACE INTO pending.history (session, line, "
                            "source, source_raw) VALUES (?1, ?2, ?3, ?3)",
    [WRITE_PENDING_OUTPUT] = "INSERT OR REPLACE INTO pending.output_history (session, "
                             "line, output) VALUES (?1, ?2, ?3)",
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

/* Stops a statement at the query's deadline, or when it is stopped (1:
 * interrupt). */
static int past_deadline(void *data)
{
    return history_glob_clock_up(data) ? 1 : 0;
}

/* sessions.workspace, added to a database made before it: its rows then have
 * none, and belong to no workspace. Another kernel may add it at the same time. */
static int add_workspace_column(sqlite3 *db)
{
    static const char probe[] = "SELECT workspace FROM main.sessions LIMIT 0";
    if (sqlite3_exec(db, probe, NULL, NULL, NULL) == SQLITE_OK)
        return SQLITE_OK;
    int rc = sqlite3_exec(db, "ALTER TABLE main.sessions ADD COLUMN workspace TEXT", NULL,
                          NULL, NULL);
    return rc == SQLITE_OK ? rc : sqlite3_exec(db, probe, NULL, NULL, NULL);
}

/* Opens path (NULL: memory) with the schema in place, the pending tables and
 * the search's glob. SQLITE_OK or a result code with why; *db is NULL on
 * failure. */
static int open_db(struct history *h, const char *path, sqlite3 **db, char *why,
                   size_t whylen)
{
    /* A link in the database's place is refused rather than followed: it
     * would make a database of whatever file it names. */
    int rc = sqlite3_open_v2(path ? path : ":memory:", db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                             NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(*db, HISTORY_OPEN_BUSY_MS);
        /* WAL where the file system allows it; otherwise SQLite keeps its
         * rollback journal, which is slower for readers but as safe. */
        rc = sqlite3_exec(
            *db, path ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" : "", NULL,
            NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db, schema, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = add_workspace_column(*db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db, pending_schema, NULL, NULL, NULL);
    if (rc == SQLITE_OK && history_glob_register(*db, &h->clock) != 0)
        rc = SQLITE_ERROR;
    if (rc != SQLITE_OK) {
        snprintf(why, whylen, "%s", *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
        sqlite3_close(*db);
        *db = NULL;
        return rc;
    }
    sqlite3_progress_handler(*db, 1000, past_deadline, &h->clock);
    return rc;
}

/* A new row in sessions, of this workspace: number (0: the next one) in
 * h->session. */
static int begin_session(struct history *h, long long number, char *why, size_t whylen)
{
    int rc = number > 0 ? run(h->db,
                              "INSERT INTO main.sessions (session, start, num_cmds, "
                              "workspace) VALUES (?1, " NOW ", 0, ?3)",
                              number, 0, h->workspace, NULL, why, whylen)
                        : run(h->db,
                              "INSERT INTO main.sessions (start, num_cmds, workspace) "
                              "VALUES (" NOW ", 0, ?3)",
                              0, 0, h->workspace, NULL, why, whylen);
    if (rc == SQLITE_DONE)
        h->session = sqlite3_last_insert_rowid(h->db);
    return rc;
}

static void end_session(struct history *h)
{
    char why[256];
    run(h->db,
        "UPDATE main.sessions SET end = " NOW ", num_cmds = "
        "(SELECT count(*) FROM h_in WHERE session = ?1) WHERE session = ?1",
        h->session, 0, NULL, NULL, why, sizeof why);
}

/* A history in memory, numbering on from session (0: from 1). */
static int use_memory(struct history *h, long long session)
{
    char why[256];
    if (open_db(h, NULL, &h->db, why, sizeof why) != SQLITE_OK ||
        begin_session(h, session, why, sizeof why) != SQLITE_DONE) {
        log_error("history: cannot keep it even in memory: %s", why);
        close_db(h);
        return -ENOMEM;
    }
    return 0;
}

static void history_write_later(struct history *h);

int history_open(struct history *h, const char *path, const char *workspace)
{
    memset(h, 0, sizeof *h);
    h->retry = history_retry;
    h->write_later = history_write_later;
    if (!(h->workspace = strdup(workspace ? workspace : "")))
        return -ENOMEM;
    if (!path)
        return use_memory(h, 0);
    char dir[PATH_MAX], why[512] = "";
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        fsutil_mkdir_p(dir, 0700); /* if it fails, opening says why */
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        h->folder = fd >= 0 ? fd + 1 : 0;
    }
    struct stat st;
    bool fresh = stat(path, &st) != 0;
    if (open_db(h, path, &h->db, why, sizeof why) == SQLITE_OK &&
        begin_session(h, 0, why, sizeof why) == SQLITE_DONE) {
        /* Cells hold what users type, secrets too: a new database is theirs
         * alone (its journal files take its mode). */
        if (fresh)
            chmod(path, 0600);
        sqlite3_busy_timeout(h->db, HISTORY_BUSY_MS);
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

/* Writes the pending cells to the file, in one transaction. 0, -EBUSY while
 * another process holds it, -EIO on another failure (why says it). */
static int flush_pending(struct history *h, char *why, size_t whylen)
{
    if (!h->pending)
        return 0;
    char *msg = NULL;
    int rc = sqlite3_exec(h->db, flush_sql, NULL, NULL, &msg);
    snprintf(why, whylen, "%s", msg ? msg : "");
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(h->db))
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        if (h->pending_said)
            log_info("history: the %zu entries that waited are written to %s", h->pending,
                     h->path);
        h->pending = h->pending_bytes = 0;
        h->pending_said = false;
        return 0;
    }
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED ? -EBUSY : -EIO;
}

void history_close(struct history *h)
{
    history_thread_end(h); /* and the writes that waited for it */
    if (h->db) {
        char why[256];
        sqlite3_busy_timeout(h->db, HISTORY_OPEN_BUSY_MS); /* the loop has ended */
        if (h->path && flush_pending(h, why, sizeof why) != 0)
            log_warn("history: %zu entries could not be written to %s (%s): they are "
                     "lost with this kernel",
                     h->pending, h->path, why);
        end_session(h);
        close_db(h);
    }
    if (h->folder > 0)
        close(h->folder - 1);
    free(h->path);
    free(h->workspace);
    memset(h, 0, sizeof *h);
}

int history_folder(const struct history *h, char *out, size_t len)
{
    char link[64];
    if (h->folder <= 0 || len < 2)
        return -ENOENT;
    snprintf(link, sizeof link, "/proc/self/fd/%d", h->folder - 1);
    ssize_t n = readlink(link, out, len - 1);
    if (n <= 0 || (size_t)n >= len - 1 || out[0] != '/')
        return -ENOENT;
    out[n] = 0;
    static const char gone[] = " (deleted)";
    size_t g = sizeof gone - 1;
    if ((size_t)n > g && strcmp(out + n - g, gone) == 0)
        return -ENOENT;
    return 0;
}

/* The file failed a write: the history goes on in memory, with this
 * session's cells as far as the file (and the pending ones) still give them. */
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
    h->pending = h->pending_bytes = 0;
    if (use_memory(h, h->session) == 0) {
        sqlite3_stmt *st = NULL;
        char ignored[256];
        if (sqlite3_prepare_v2(old,
                               "SELECT line, source_raw FROM h_in WHERE session = ?1", -1,
                               &st, NULL) == SQLITE_OK) {
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

/* The file is busy: the write waits with the pending ones, or, past the
 * queue's bound, the file is given up. */
static int write_pending(struct history *h, int which, long long line, const char *text,
                         const char *busy)
{
    char why[400];
    size_t len = strlen(text);
    if (h->pending >= HISTORY_PENDING_MAX ||
        h->pending_bytes + len > HISTORY_PENDING_BYTES) {
        snprintf(why, sizeof why, "%.256s, and %zu entries already wait", busy,
                 h->pending);
        give_up_file(h, why);
        return -EAGAIN; /* written in memory by the caller */
    }
    if (!h->pending)
        h->pending_since = monotime_now();
    int rc = run_write(h, which + WRITE_PENDING_INPUT, line, text, why, sizeof why);
    if (rc != SQLITE_DONE) {
        give_up_file(h, why);
        return -EAGAIN;
    }
    h->pending++;
    h->pending_bytes += len;
    return 0;
}

/* A write made while queries hold db (history_thread.c), for later. */
struct history_later {
    struct history_later *next;
    int which;
    long long line;
    char text[];
};

/* Keeps a write for when db comes back; past the bounds of the pending
 * entries, it is dropped (the log says so once). */
static int write_later(struct history *h, int which, long long line, const char *text)
{
    size_t len = strlen(text);
    struct history_later *w = NULL;
    if (h->nlater < HISTORY_PENDING_MAX && h->later_bytes + len <= HISTORY_PENDING_BYTES)
        w = malloc(sizeof *w + len + 1);
    if (!w) {
        if (!h->later_said)
            log_warn("history: too many cells were written while the history was read: "
                     "some are not kept");
        h->later_said = true;
        return -ENOMEM;
    }
    w->next = NULL;
    w->which = which;
    w->line = line;
    memcpy(w->text, text, len + 1);
    if (!h->later)
        h->later_tail = &h->later;
    *h->later_tail = w;
    h->later_tail = &w->next;
    h->nlater++;
    h->later_bytes += len;
    return 0;
}

static int write_row(struct history *h, int which, long long line, const char *text);

static void history_write_later(struct history *h)
{
    struct history_later *w = h->later;
    h->later = NULL;
    h->nlater = h->later_bytes = 0;
    h->later_said = false;
    while (w) {
        struct history_later *next = w->next;
        write_row(h, w->which, w->line, w->text);
        free(w);
        w = next;
    }
}

/* A write: behind the pending ones while the file is busy; on the file's
 * other failures, given up for memory and tried there. */
static int write_row(struct history *h, int which, long long line, const char *text)
{
    char why[256];
    if (h->lent)
        return write_later(h, which, line, text);
    if (!h->db)
        return -ENOMEM;
    /* While entries wait, a write joins them, but for a try at most every
     * HISTORY_RETRY_S: each try may wait HISTORY_BUSY_MS. */
    int rc = SQLITE_DONE, busy = 0;
    if (h->path && h->pending) {
        double now = monotime_now();
        busy = now < h->retry_at ? -EBUSY : flush_pending(h, why, sizeof why);
        h->retry_at = now + HISTORY_RETRY_S;
    }
    if (busy == -EIO) {
        give_up_file(h, why);
    } else if (busy == 0) {
        rc = run_write(h, which, line, text, why, sizeof why);
        if (h->path && ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED))
            busy = -EBUSY;
        else if (rc != SQLITE_DONE && h->path)
            give_up_file(h, why);
        else if (rc == SQLITE_DONE)
            return 0;
    }
    if (busy == -EBUSY && write_pending(h, which, line, text, why) == 0)
        return 0;
    if (!h->db)
        return -ENOMEM;
    rc = run_write(h, which, line, text, why, sizeof why);
    if (rc != SQLITE_DONE) {
        log_debug("history: %s", why);
        return -EIO;
    }
    return 0;
}

void history_retry(struct history *h)
{
    double now = monotime_now();
    if (!h->db || !h->path || !h->pending || h->lent || now < h->retry_at)
        return;
    h->retry_at = now + HISTORY_RETRY_S;
    char why[256];
    int rc = flush_pending(h, why, sizeof why);
    if (rc == -EIO) {
        give_up_file(h, why);
    } else if (rc == -EBUSY && !h->pending_said &&
               now - h->pending_since > HISTORY_SAY_S) {
        h->pending_said = true;
        log_warn("history: %s is held by another process (%s): %zu entries wait in "
                 "memory, and are written once it is free (at most %d wait)",
                 h->path, why, h->pending, HISTORY_PENDING_MAX);
    }
}

void history_new_session(struct history *h)
{
    char why[256];
    if (h->lent)
        history_thread_drain(h); /* db back, and the writes that waited */
    if (!h->db)
        return;
    /* A restart is rare and the worker is away: the file may keep the loop as
     * long as at the start, rather than the numbering move to memory. */
    sqlite3_busy_timeout(h->db, HISTORY_OPEN_BUSY_MS);
    if (h->path && flush_pending(h, why, sizeof why) != 0)
        give_up_file(h, why);
    end_session(h);
    if (begin_session(h, 0, why, sizeof why) != SQLITE_DONE) {
        if (h->path) {
            h->session++; /* numbering goes on in memory */
            give_up_file(h, why);
        } else {
            log_warn("history: cannot begin a new session: %s", why);
        }
    }
    sqlite3_busy_timeout(h->db, HISTORY_BUSY_MS);
}

int history_add(struct history *h, int line, const char *input)
{
    return write_row(h, WRITE_INPUT, line, input);
}

int history_set_output(struct history *h, int line, const char *output)
{
    return write_row(h, WRITE_OUTPUT, line, output);
}

json_t *history_query(struct history *h, const struct history_query *q,
                      size_t max_entries, size_t max_bytes, char *err, size_t errlen)
{
    history_retry(h); /* the pending entries, if the file is free again */
    struct history_reader r = {.db = h->db,
                               .clock = &h->clock,
                               .workspace = h->workspace,
                               .session = h->session,
                               .pending = h->pending > 0};
    return history_read(&r, q, max_entries, max_bytes, err, errlen);
}
