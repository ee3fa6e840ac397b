/* history_thread: the history's queries, answered on a thread of their own,
 * so that the supervisor's loop never waits on one (history.h's
 * history_submit).
 *
 * One thread answers the queries one at a time, in the order they were
 * asked (at most HISTORY_JOBS_MAX wait), each within HISTORY_QUERY_MS; an
 * eventfd that the loop watches says that answers wait, and history_collect
 * hands them to their callers in the same order, on the loop's thread.
 *
 * What is hard:
 * - Two threads, one database file. The thread reads the file on a read-only
 *   connection of its own (WAL mode: it reads while the loop's connection
 *   writes, and sees every write committed before the query was asked).
 *   SQLite is built thread-safe (checked: sqlite3_threadsafe); each
 *   connection is used by one thread at a time.
 * - What only the loop's connection holds: a history in memory, and the
 *   entries that wait for a busy file (an attached in-memory database). Such
 *   a query is "lent" the loop's connection: from its submission to the
 *   collection of its answer the loop does not touch it; the cells written
 *   meanwhile wait in a list (history.c) and are written, in order, once the
 *   last lent query is collected. What needs the connection at once (a new
 *   session, the end) stops the queries and waits the few milliseconds that
 *   takes.
 * - Stopping a query: its clock's stop flag, which the progress handler and
 *   the glob look at (history_glob.h), as they look at its deadline.
 * - Where there can be no thread (SQLite built single-threaded, no thread to
 *   be had), each query is answered at once on the loop's connection, still
 *   within HISTORY_QUERY_MS, and collected the same way. */
#include "kernel/supervisor/history_thread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "kernel/supervisor/history_glob.h"
#include "protocol/errbuf.h"

#define READER_BUSY_MS 10 /* a reader waits only for WAL recovery by another */

struct job {
    struct job *next;
    unsigned long long seq;
    struct history_query q; /* q.pattern is pattern */
    char *pattern;
    size_t max_entries, max_bytes;
    long long session;
    bool lent, pending; /* run on the loop's db; read the waiting entries */
    sqlite3 *db;        /* the loop's, when lent */
    struct history_glob_clock *db_clock;
    history_done_fn *done;
    void *ctx, *arg;
    json_t *list;
    char err[256];
};

struct history_thread {
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    pthread_t tid;
    bool started; /* the thread runs; false: queries are answered in the loop */
    bool quit, busy;
    struct job *todo, **todo_tail; /* asked, not yet run */
    struct job *done, **done_tail; /* answered, not yet collected */
    unsigned long long seq, stop_upto;
    struct history_glob_clock *running; /* the running query's clock */
    size_t asked;                       /* the loop's: asked and not collected */
    int efd;
    char *path, *workspace; /* the thread's own copies */
    sqlite3 *db;            /* the thread's read-only connection, once opened */
    struct history_glob_clock clock;
};

static int clock_up(void *c)
{
    return history_glob_clock_up(c) ? 1 : 0;
}

/* The thread's connection to the file. 0 or -EIO with why in err. */
static int open_reader(struct history_thread *t, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(
        t->path, &t->db,
        SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
    if (rc == SQLITE_OK && history_glob_register(t->db, &t->clock) != 0)
        rc = SQLITE_ERROR;
    if (rc != SQLITE_OK) {
        errbuf_set(-EIO, err, errlen, "the history cannot be read: %s",
                   t->db ? sqlite3_errmsg(t->db) : sqlite3_errstr(rc));
        sqlite3_close(t->db);
        t->db = NULL;
        return -EIO;
    }
    sqlite3_busy_timeout(t->db, READER_BUSY_MS);
    sqlite3_progress_handler(t->db, 1000, clock_up, &t->clock);
    return 0;
}

static void run_job(struct history_thread *t, struct job *j, struct history_glob_clock *c)
{
    struct history_reader r = {.db = j->db,
                               .clock = c,
                               .workspace = t->workspace,
                               .session = j->session,
                               .pending = j->pending};
    if (!j->lent) {
        if (!t->db && (!t->path || open_reader(t, j->err, sizeof j->err) != 0)) {
            if (!t->path)
                snprintf(j->err, sizeof j->err, "the history is not available");
            return;
        }
        r.db = t->db;
    }
    j->list =
        history_read(&r, &j->q, j->max_entries, j->max_bytes, j->err, sizeof j->err);
}

/* Runs the first job asked, t->mu held (released while it runs), and queues
 * its answer for the loop. */
static void run_next(struct history_thread *t)
{
    struct job *j = t->todo;
    if (!(t->todo = j->next))
        t->todo_tail = &t->todo;
    j->next = NULL;
    struct history_glob_clock *c = j->lent ? j->db_clock : &t->clock;
    atomic_store(&c->stop, j->seq <= t->stop_upto);
    t->running = c;
    t->busy = true;
    pthread_mutex_unlock(&t->mu);
    run_job(t, j, c);
    pthread_mutex_lock(&t->mu);
    atomic_store(&c->stop, false);
    t->running = NULL;
    t->busy = false;
    *t->done_tail = j;
    t->done_tail = &j->next;
    uint64_t one = 1;
    if (write(t->efd, &one, sizeof one) < 0) {
        /* only EAGAIN, with the counter full: it is readable already */
    }
    pthread_cond_broadcast(&t->idle);
}

static void *thread_main(void *data)
{
    struct history_thread *t = data;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->todo && !t->quit)
            pthread_cond_wait(&t->wake, &t->mu);
        if (t->quit)
            break;
        run_next(t);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* The thread and its eventfd, with every signal blocked in it (they are the
 * loop's, through its signalfd). 0 or -errno. */
static int start(struct history *h, char *err, size_t errlen)
{
    struct history_thread *t = calloc(1, sizeof *t);
    if (!t || !(t->workspace = strdup(h->workspace)) ||
        (h->path && !(t->path = strdup(h->path)))) {
        if (t)
            free(t->workspace);
        free(t);
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    }
    t->todo_tail = &t->todo;
    t->done_tail = &t->done;
    if ((t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        int rc = -errno;
        free(t->path);
        free(t->workspace);
        free(t);
        return errbuf_set(rc, err, errlen, "the history cannot be read: %s",
                          strerror(-rc));
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->wake, NULL);
    pthread_cond_init(&t->idle, NULL);
    if (sqlite3_threadsafe()) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        t->started = pthread_create(&t->tid, NULL, thread_main, t) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!t->started)
        log_warn("history: no thread for its queries (SQLite %s): each is answered in "
                 "the loop, within %d ms",
                 sqlite3_threadsafe() ? "has one, the system has none"
                                      : "is built single-threaded",
                 HISTORY_QUERY_MS);
    h->thread = t;
    return 0;
}

int history_submit(struct history *h, const struct history_query *q, size_t max_entries,
                   size_t max_bytes, history_done_fn *done, void *ctx, void *arg,
                   char *err, size_t errlen)
{
    int rc;
    if (!h->db)
        return errbuf_set(-EIO, err, errlen, "the history is not available");
    if (!h->thread && (rc = start(h, err, errlen)))
        return rc;
    struct history_thread *t = h->thread;
    if (t->asked >= HISTORY_JOBS_MAX)
        return errbuf_set(-EBUSY, err, errlen,
                          "the kernel is answering %d history queries already; ask "
                          "again once one is answered",
                          HISTORY_JOBS_MAX);
    struct job *j = calloc(1, sizeof *j);
    if (!j || !(j->pattern = strdup(q->pattern ? q->pattern : "*"))) {
        free(j);
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    }
    h->retry(h); /* the waiting entries, if the file is free again */
    j->q = *q;
    j->q.pattern = j->pattern;
    j->max_entries = max_entries;
    j->max_bytes = max_bytes;
    j->session = h->session;
    j->pending = h->pending > 0;
    j->lent = !h->path || j->pending || !t->path;
    j->db = h->db;
    j->db_clock = &h->clock;
    j->done = done;
    j->ctx = ctx;
    j->arg = arg;
    h->lent += j->lent;
    t->asked++;
    pthread_mutex_lock(&t->mu);
    j->seq = ++t->seq;
    *t->todo_tail = j;
    t->todo_tail = &j->next;
    if (t->started)
        pthread_cond_signal(&t->wake);
    else
        run_next(t); /* at once, in the loop */
    pthread_mutex_unlock(&t->mu);
    return 0;
}

int history_event_fd(const struct history *h)
{
    return h->thread ? h->thread->efd : -1;
}

size_t history_asked(const struct history *h)
{
    return h->thread ? h->thread->asked : 0;
}

/* Takes the answered jobs, in order, and gives the loop's db back if no
 * query holds it any more. */
static struct job *take_done(struct history *h)
{
    struct history_thread *t = h->thread;
    uint64_t n;
    if (read(t->efd, &n, sizeof n) < 0) {
        /* EAGAIN: nothing was counted since the last read */
    }
    pthread_mutex_lock(&t->mu);
    struct job *list = t->done;
    t->done = NULL;
    t->done_tail = &t->done;
    pthread_mutex_unlock(&t->mu);
    for (struct job *j = list; j; j = j->next) {
        h->lent -= j->lent;
        t->asked--;
    }
    if (!h->lent)
        h->write_later(h);
    return list;
}

static void free_job(struct job *j)
{
    json_decref(j->list);
    free(j->pattern);
    free(j);
}

void history_collect(struct history *h)
{
    if (!h->thread)
        return;
    struct job *j = take_done(h);
    while (j) {
        struct job *next = j->next;
        json_t *list = j->list;
        j->list = NULL;
        j->done(j->ctx, j->arg, list, list ? NULL : j->err);
        free_job(j);
        j = next;
    }
}

/* Stops every query asked so far, t->mu held. */
static void stop_all(struct history_thread *t)
{
    t->stop_upto = t->seq;
    if (t->running)
        atomic_store(&t->running->stop, true);
}

void history_thread_drain(struct history *h)
{
    struct history_thread *t = h->thread;
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    stop_all(t);
    while (t->started && (t->todo || t->busy))
        pthread_cond_wait(&t->idle, &t->mu);
    pthread_mutex_unlock(&t->mu);
    history_collect(h);
}

/* Drops each job of list: its caller releases what it gave. */
static void drop_jobs(struct history *h, struct job *j)
{
    while (j) {
        struct job *next = j->next;
        h->lent -= j->lent;
        j->done(j->ctx, j->arg, NULL, NULL);
        free_job(j);
        j = next;
    }
}

void history_thread_end(struct history *h)
{
    struct history_thread *t = h->thread;
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    stop_all(t);
    t->quit = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->mu);
    if (t->started)
        pthread_join(t->tid, NULL);
    drop_jobs(h, t->done);
    drop_jobs(h, t->todo);
    h->thread = NULL;
    if (!h->lent)
        h->write_later(h);
    sqlite3_close(t->db);
    close(t->efd);
    pthread_cond_destroy(&t->idle);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->mu);
    free(t->path);
    free(t->workspace);
    free(t);
}
