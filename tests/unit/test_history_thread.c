/* Unit tests for the history's query thread (history_submit): answers come
 * through its descriptor, in order; the loop's connection is left to the
 * loop where the thread reads the file, and lent (writes waiting in order)
 * where it cannot; a new session stops the queries, and the end drops them. */
#include <errno.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/supervisor/history.h"
#include "testing.h"

#define ANSWERS_MAX 16

/* What the queries' done received, in order. */
struct answers {
    size_t n, dropped;
    json_t *lists[ANSWERS_MAX];
    char errs[ANSWERS_MAX][256];
    int args[ANSWERS_MAX];
};

static void done(void *ctx, void *arg, json_t *list, const char *err)
{
    struct answers *a = ctx;
    if (!list && !err) {
        a->dropped++;
        return;
    }
    REQUIRE(a->n < ANSWERS_MAX);
    a->lists[a->n] = list;
    snprintf(a->errs[a->n], sizeof a->errs[0], "%s", err ? err : "");
    a->args[a->n++] = (int)(long)arg;
}

static void release(struct answers *a)
{
    for (size_t i = 0; i < a->n; i++)
        json_decref(a->lists[i]);
    memset(a, 0, sizeof *a);
}

static int ask(struct history *h, struct answers *a, const char *json, int arg)
{
    json_t *req = json_loads(json, 0, NULL);
    char err[256];
    struct history_query q;
    REQUIRE(history_query_parse(req, &q, err, sizeof err) == 0);
    int rc = history_submit(h, &q, 0, 0, done, a, (void *)(long)arg, err, sizeof err);
    json_decref(req);
    return rc;
}

/* What the loop does: waits for the descriptor, collects (a few seconds at
 * most). */
static void wait_answers(struct history *h)
{
    for (int i = 0; i < 500 && history_asked(h) > 0; i++) {
        struct pollfd p = {.fd = history_event_fd(h), .events = POLLIN};
        REQUIRE(poll(&p, 1, 10) >= 0);
        history_collect(h);
    }
    CHECK_INT(history_asked(h), 0);
}

static const char *temp_dir(void)
{
    static char dir[] = "/tmp/sandpit-history-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    testing_remove_after(dir);
    return dir;
}

static int count_in(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    REQUIRE(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* "*" and 60 classes: a pattern the check accepts, costly over large cells. */
static const char *costly_pattern(void)
{
    static char p[256];
    strcpy(p, "{\"hist_access_type\":\"search\",\"pattern\":\"*");
    for (int i = 0; i < 60; i++)
        strcat(p, "[a]");
    strcat(p, "b\"}");
    return p;
}

static void add_large_cells(struct history *h, int first, int count)
{
    size_t big = 1 << 20;
    char *cell = malloc(big + 1);
    REQUIRE(cell != NULL);
    memset(cell, 'a', big);
    cell[big] = 0;
    for (int i = 0; i < count; i++)
        REQUIRE(history_add(h, first + i, cell) == 0);
    free(cell);
}

static void check_sane(void)
{
    CHECK(sqlite3_threadsafe() != 0); /* Debian's is serialized */
}

/* A file: the thread reads it on its own connection, and the loop's writes
 * go to the file while a costly search runs; answers come in order. */
static void test_the_thread_reads_the_file_while_the_loop_writes(void)
{
    check_sane();
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history h;
    struct answers a = {0};
    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK_INT(history_event_fd(&h), -1); /* no thread before the first query */
    REQUIRE(history_add(&h, 1, "x = 1") == 0);
    add_large_cells(&h, 2, 10);
    REQUIRE(ask(&h, &a, costly_pattern(), 1) == 0);
    REQUIRE(ask(&h, &a, "{\"hist_access_type\":\"range\",\"stop\":2}", 2) == 0);
    CHECK(history_event_fd(&h) >= 0);
    CHECK_INT(h.lent, 0);
    /* the loop's connection is the loop's: this is in the file at once */
    REQUIRE(history_add(&h, 12, "during = 12") == 0);
    CHECK_INT(count_in(path, "SELECT count(*) FROM history WHERE line = 12"), 1);
    CHECK_INT(a.n, 0); /* answers come only through history_collect */
    wait_answers(&h);
    REQUIRE(a.n == 2);
    CHECK_INT(a.args[0], 1);
    CHECK_INT(a.args[1], 2);
    CHECK(a.lists[0] ? json_array_size(a.lists[0]) == 0
                     : strstr(a.errs[0], "took longer than") != NULL);
    REQUIRE(json_array_size(a.lists[1]) == 1);
    CHECK_STR(json_string_value(json_array_get(json_array_get(a.lists[1], 0), 2)),
              "x = 1");
    release(&a);
    history_close(&h);
}

/* In memory, the thread reads the loop's connection: the writes meanwhile
 * wait, and are written in order once the answer is collected. */
static void test_a_history_in_memory_is_lent_to_the_thread(void)
{
    struct history h;
    struct answers a = {0};
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    REQUIRE(history_add(&h, 1, "a = 1") == 0);
    REQUIRE(ask(&h, &a, "{\"hist_access_type\":\"tail\",\"n\":5}", 1) == 0);
    CHECK_INT(h.lent, 1);
    REQUIRE(history_add(&h, 2, "b = 2") == 0);
    REQUIRE(history_set_output(&h, 2, "2") == 0);
    CHECK_INT(h.nlater, 2);
    history_retry(&h); /* leaves the lent connection alone */
    wait_answers(&h);
    CHECK_INT(h.lent, 0);
    CHECK_INT(h.nlater, 0);
    REQUIRE(a.n == 1);
    CHECK_INT(json_array_size(a.lists[0]), 1);
    REQUIRE(ask(&h, &a, "{\"hist_access_type\":\"range\",\"output\":true}", 2) == 0);
    wait_answers(&h);
    REQUIRE(a.n == 2);
    REQUIRE(json_array_size(a.lists[1]) == 2);
    json_t *second = json_array_get(json_array_get(a.lists[1], 1), 2);
    CHECK_STR(json_string_value(json_array_get(second, 0)), "b = 2");
    CHECK_STR(json_string_value(json_array_get(second, 1)), "2");
    release(&a);
    history_close(&h);
}

/* Entries that wait for a busy file are only on the loop's connection: a
 * query then reads it, and sees them. */
static void test_waiting_entries_are_read_with_the_file(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history h;
    struct answers a = {0};
    REQUIRE(history_open(&h, path, "/ws") == 0);
    REQUIRE(history_add(&h, 1, "before = 1") == 0);
    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(path, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    REQUIRE(history_add(&h, 2, "during = 2") == 0);
    CHECK_INT(h.pending, 1);
    REQUIRE(ask(&h, &a, "{\"hist_access_type\":\"range\"}", 1) == 0);
    CHECK_INT(h.lent, 1);
    wait_answers(&h);
    REQUIRE(a.n == 1);
    REQUIRE(json_array_size(a.lists[0]) == 2);
    CHECK_STR(json_string_value(json_array_get(json_array_get(a.lists[0], 1), 2)),
              "during = 2");
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    release(&a);
    history_close(&h);
}

/* A new session needs the loop's connection at once: the queries that hold
 * it are stopped (and say so) rather than waited for. */
static void test_a_new_session_stops_the_queries(void)
{
    struct history h;
    struct answers a = {0};
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    add_large_cells(&h, 1, 20);
    long long before = h.session;
    REQUIRE(ask(&h, &a, costly_pattern(), 1) == 0);
    REQUIRE(ask(&h, &a, costly_pattern(), 2) == 0);
    history_new_session(&h);
    CHECK(h.session == before + 1);
    CHECK_INT(history_asked(&h), 0);
    REQUIRE(a.n == 2);
    for (size_t i = 0; i < 2; i++) {
        CHECK(a.lists[i] == NULL);
        CHECK(strstr(a.errs[i], "was stopped: the kernel is restarting") != NULL);
    }
    /* the next query runs as any other */
    REQUIRE(history_add(&h, 1, "new = 1") == 0);
    REQUIRE(ask(&h, &a, "{\"hist_access_type\":\"range\"}", 3) == 0);
    wait_answers(&h);
    REQUIRE(a.n == 3);
    CHECK_INT(json_array_size(a.lists[2]), 1);
    release(&a);
    history_close(&h);
}

/* At most HISTORY_JOBS_MAX queries wait; the end drops those not collected
 * (their callers release what they gave) and joins the thread. */
static void test_the_queue_is_bounded_and_the_end_drops_it(void)
{
    struct history h;
    struct answers a = {0};
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    add_large_cells(&h, 1, 4);
    for (int i = 0; i < HISTORY_JOBS_MAX; i++)
        REQUIRE(ask(&h, &a, costly_pattern(), i) == 0);
    CHECK_INT(ask(&h, &a, "{}", 99), -EBUSY);
    CHECK_INT(history_asked(&h), HISTORY_JOBS_MAX);
    REQUIRE(history_add(&h, 5, "late = 5") == 0); /* waits for the connection */
    history_close(&h);
    CHECK_INT(a.n, 0);
    CHECK_INT(a.dropped, HISTORY_JOBS_MAX);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_the_thread_reads_the_file_while_the_loop_writes),
    TESTING_CASE(test_a_history_in_memory_is_lent_to_the_thread),
    TESTING_CASE(test_waiting_entries_are_read_with_the_file),
    TESTING_CASE(test_a_new_session_stops_the_queries),
    TESTING_CASE(test_the_queue_is_bounded_and_the_end_drops_it),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
