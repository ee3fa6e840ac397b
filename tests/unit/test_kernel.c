/* Unit tests for the supervisor's pure parts: the history (its database and
 * queries), and options. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/options.h"
#include "kernel/supervisor/history.h"
#include "testing.h"

static json_t *query(struct history *h, const char *json)
{
    json_t *req = json_loads(json, 0, NULL);
    char err[128];
    struct history_query q;
    json_t *out = history_query_parse(req, &q, err, sizeof err) == 0
                      ? history_query(h, &q, 0, 0, err, sizeof err)
                      : NULL;
    json_decref(req);
    return out;
}

/* The input of entry i of a query's list. */
static const char *input_of(const json_t *list, size_t i)
{
    return json_string_value(json_array_get(json_array_get(list, i), 2));
}

static json_int_t field_of(const json_t *list, size_t i, size_t field)
{
    return json_integer_value(json_array_get(json_array_get(list, i), field));
}

/* A folder of its own for a test's databases, removed after the test. */
static const char *temp_dir(void)
{
    static char dir[] = "/tmp/sandpit-history-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    testing_remove_after(dir);
    return dir;
}

static void test_history(void)
{
    struct history h;
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    CHECK_INT(h.session, 1);
    history_add(&h, 1, "a = 1");
    history_add(&h, 2, "b = 2");
    history_set_output(&h, 2, "2");
    history_add(&h, 3, "a = 1");
    history_new_session(&h);
    CHECK_INT(h.session, 2);
    history_add(&h, 1, "c = 3");

    json_t *r = query(&h, "{\"hist_access_type\":\"tail\",\"n\":2}");
    REQUIRE(r && json_array_size(r) == 2);
    CHECK_INT(field_of(r, 1, 0), 2);
    CHECK_STR(input_of(r, 1), "c = 3");
    CHECK_STR(input_of(r, 0), "a = 1");
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"range\",\"session\":-1,\"start\":2,\"stop\":3,"
                  "\"output\":true}");
    REQUIRE(r && json_array_size(r) == 1);
    json_t *pair = json_array_get(json_array_get(r, 0), 2);
    CHECK_STR(json_string_value(json_array_get(pair, 0)), "b = 2");
    CHECK_STR(json_string_value(json_array_get(pair, 1)), "2");
    json_decref(r);
    /* session 1 by its number, from line 2 to its end */
    r = query(&h, "{\"hist_access_type\":\"range\",\"session\":1,\"start\":2}");
    REQUIRE(r && json_array_size(r) == 2);
    CHECK_INT(field_of(r, 0, 1), 2);
    CHECK_INT(field_of(r, 1, 1), 3);
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"range\",\"session\":0}");
    CHECK_INT(json_array_size(r), 1);
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"a*\"}");
    CHECK_INT(json_array_size(r), 2);
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"a*\",\"unique\":true}");
    REQUIRE(json_array_size(r) == 1);
    CHECK_INT(field_of(r, 0, 1), 3); /* the latest occurrence */
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"*\",\"n\":3}");
    REQUIRE(json_array_size(r) == 3);
    CHECK_STR(input_of(r, 2), "c = 3"); /* the last three, in order */
    json_decref(r);
    history_close(&h);
}

static void test_history_queries_are_checked(void)
{
    const char *bad[] = {
        "{\"hist_access_type\":\"sideways\"}",
        "{\"hist_access_type\":\"tail\",\"n\":-1}",
        "{\"hist_access_type\":\"tail\",\"n\":\"10\"}",
        "{\"hist_access_type\":\"range\",\"session\":1.5}",
        "{\"hist_access_type\":\"range\",\"start\":-2}",
        "{\"hist_access_type\":\"search\",\"pattern\":7}",
        "{\"hist_access_type\":\"search\",\"unique\":\"yes\"}",
        "{\"hist_access_type\":\"tail\",\"output\":1}",
        "[1, 2]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *req = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        REQUIRE(req != NULL);
        struct history_query q;
        char err[160] = "";
        CHECK_INT(history_query_parse(req, &q, err, sizeof err), -EINVAL);
        CHECK(strncmp(err, "history: ", 9) == 0);
        json_decref(req);
    }
    /* absent and null fields take their defaults */
    json_t *req = json_loads("{\"n\": null, \"hist_access_type\": null}", 0, NULL);
    struct history_query q;
    char err[160];
    REQUIRE(history_query_parse(req, &q, err, sizeof err) == 0);
    CHECK(q.access == HISTORY_TAIL);
    CHECK_INT(q.n, 10);
    json_decref(req);
}

static void test_history_bounds_keep_the_newest(void)
{
    struct history h;
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    char line[64];
    for (int i = 1; i <= 50; i++) {
        snprintf(line, sizeof line, "x = %d  # ten bytes", i);
        REQUIRE(history_add(&h, i, line) == 0);
    }
    struct history_query q = {.access = HISTORY_RANGE, .start = 1};
    char err[128];
    json_t *r = history_query(&h, &q, 5, 0, err, sizeof err);
    REQUIRE(r && json_array_size(r) == 5);
    CHECK_INT(field_of(r, 0, 1), 46);
    CHECK_INT(field_of(r, 4, 1), 50);
    json_decref(r);
    r = history_query(&h, &q, 0, 3 * strlen("x = 50  # ten bytes"), err, sizeof err);
    REQUIRE(r && json_array_size(r) == 3);
    CHECK_INT(field_of(r, 0, 1), 48);
    json_decref(r);
    history_close(&h);
}

static void test_history_outlives_the_process_in_its_file(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/deeper/history.sqlite", temp_dir());
    struct history h;
    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK(h.path != NULL); /* kept in the file */
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0600); /* the user's alone */
    history_add(&h, 1, "first = 1");
    history_add(&h, 2, "first");
    history_set_output(&h, 2, "1");
    long long before = h.session;
    history_close(&h);

    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK_INT(h.session, before + 1);
    json_t *r = query(&h, "{\"hist_access_type\":\"range\",\"session\":-1,"
                          "\"output\":true}");
    REQUIRE(r && json_array_size(r) == 2);
    json_t *pair = json_array_get(json_array_get(r, 1), 2);
    CHECK_STR(json_string_value(json_array_get(pair, 0)), "first");
    CHECK_STR(json_string_value(json_array_get(pair, 1)), "1");
    json_decref(r);
    history_close(&h);
}

static void test_two_kernels_write_at_once(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history a, b;
    REQUIRE(history_open(&a, path, "/ws") == 0);
    REQUIRE(history_open(&b, path, "/ws") == 0);
    CHECK(a.session != b.session);
    for (int i = 1; i <= 100; i++) {
        CHECK_INT(history_add(&a, i, "from a"), 0);
        CHECK_INT(history_add(&b, i, "from b"), 0);
    }
    CHECK(a.path != NULL && b.path != NULL); /* neither gave the file up */
    json_t *r = query(&a, "{\"hist_access_type\":\"search\",\"pattern\":\"from *\"}");
    CHECK_INT(json_array_size(r), 200);
    json_decref(r);
    r = query(&b, "{\"hist_access_type\":\"search\",\"pattern\":\"from *\","
                  "\"unique\":true}");
    CHECK_INT(json_array_size(r), 2);
    json_decref(r);
    history_close(&a);
    history_close(&b);
}

static void test_a_corrupt_database_leaves_the_history_in_memory(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    for (int i = 0; i < 200; i++)
        fputs("this is not an SQLite database. ", f);
    fclose(f);
    struct history h;
    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK(h.path == NULL);
    CHECK_INT(history_add(&h, 1, "still = 1"), 0);
    json_t *r = query(&h, "{\"hist_access_type\":\"tail\"}");
    REQUIRE(r && json_array_size(r) == 1);
    CHECK_STR(input_of(r, 0), "still = 1");
    json_decref(r);
    history_close(&h);
}

/* The number of rows of sql's one column in the file at path. */
static long long count_in(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_a_busy_database_keeps_the_cells_waiting(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history h;
    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK_INT(history_add(&h, 1, "before = 1"), 0);
    /* Another writer holds the lock for longer than the busy timeout. */
    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(path, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_INT(history_add(&h, 2, "during = 2"), 0);
    CHECK_INT(history_set_output(&h, 2, "2"), 0);
    CHECK_INT(history_add(&h, 3, "during = 3"), 0);
    CHECK(h.path != NULL); /* the file is kept */
    CHECK_INT(h.pending, 3);
    /* the queries see the waiting entries with the file's */
    json_t *r = query(&h, "{\"hist_access_type\":\"range\",\"output\":true}");
    REQUIRE(r && json_array_size(r) == 3);
    CHECK_STR(
        json_string_value(json_array_get(json_array_get(json_array_get(r, 0), 2), 0)),
        "before = 1");
    CHECK_STR(
        json_string_value(json_array_get(json_array_get(json_array_get(r, 1), 2), 1)),
        "2");
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"during*\","
                  "\"unique\":true}");
    CHECK_INT(json_array_size(r), 2);
    json_decref(r);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    /* free again: the next write takes the waiting ones first, in order,
     * once the time of the next try has come */
    h.retry_at = 0;
    CHECK_INT(history_add(&h, 4, "after = 4"), 0);
    CHECK_INT(h.pending, 0);
    CHECK_INT(count_in(path, "SELECT count(*) FROM history"), 4);
    CHECK_INT(count_in(path, "SELECT count(*) FROM output_history"), 1);
    history_close(&h);
}

/* A link in the database's place (made where a cell could write) is not
 * followed: the file it names stays as it was. */
static void test_a_link_in_the_database_s_place_is_refused(void)
{
    char path[256], target[256];
    const char *dir = temp_dir();
    snprintf(path, sizeof path, "%s/history.sqlite", dir);
    snprintf(target, sizeof target, "%s/bashrc", dir);
    FILE *f = fopen(target, "w");
    REQUIRE(f != NULL);
    fclose(f);
    REQUIRE(symlink(target, path) == 0);
    struct history h;
    REQUIRE(history_open(&h, path, "/ws") == 0);
    CHECK(h.path == NULL);
    struct stat st;
    REQUIRE(stat(target, &st) == 0);
    CHECK_INT(st.st_size, 0);
    history_close(&h);
}

static void test_a_full_queue_gives_the_file_up(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history h;
    REQUIRE(history_open(&h, path, "/ws") == 0);
    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(path, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    for (int i = 1; i <= HISTORY_PENDING_MAX + 1; i++)
        REQUIRE(history_add(&h, i, "x = 1") == 0);
    CHECK(h.path == NULL); /* in memory, with every cell */
    json_t *r = query(&h, "{\"hist_access_type\":\"range\"}");
    CHECK_INT(json_array_size(r), HISTORY_PENDING_MAX + 1);
    json_decref(r);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    history_close(&h);
}

/* Two workspaces in one file: each sees its own sessions alone; the rows of
 * a file made before the workspace column belong to none. */
static void test_each_workspace_sees_its_own_history(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    sqlite3 *old = NULL;
    REQUIRE(sqlite3_open(path, &old) == SQLITE_OK);
    REQUIRE(sqlite3_exec(old,
                         "CREATE TABLE sessions (session INTEGER PRIMARY KEY "
                         "AUTOINCREMENT, start TIMESTAMP, end TIMESTAMP, num_cmds "
                         "INTEGER, remark TEXT);"
                         "CREATE TABLE history (session INTEGER, line INTEGER, source "
                         "TEXT, source_raw TEXT, PRIMARY KEY (session, line));"
                         "INSERT INTO sessions (start, num_cmds) VALUES ('now', 1);"
                         "INSERT INTO history VALUES (1, 1, 'old = 1', 'old = 1');",
                         NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(old);
    struct history a, b;
    REQUIRE(history_open(&a, path, "/home/a") == 0);
    REQUIRE(history_open(&b, path, "/home/b") == 0);
    CHECK(a.path != NULL && b.path != NULL);
    CHECK_INT(history_add(&a, 1, "secret = 'of a'"), 0);
    CHECK_INT(history_add(&b, 1, "mine = 'of b'"), 0);
    const char *all[] = {
        "{\"hist_access_type\":\"search\",\"pattern\":\"*\"}",
        "{\"hist_access_type\":\"search\",\"pattern\":\"*\",\"unique\":true}",
        "{\"hist_access_type\":\"tail\",\"n\":100}",
    };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        json_t *r = query(&b, all[i]);
        REQUIRE(r && json_array_size(r) == 1);
        CHECK_STR(input_of(r, 0), "mine = 'of b'");
        json_decref(r);
        r = query(&a, all[i]);
        REQUIRE(r && json_array_size(r) == 1);
        CHECK_STR(input_of(r, 0), "secret = 'of a'");
        json_decref(r);
    }
    /* a's session, or the old one, asked for by number */
    char q[128];
    long long sessions[] = {a.session, 1};
    for (int i = 0; i < 2; i++) {
        snprintf(q, sizeof q, "{\"hist_access_type\":\"range\",\"session\":%lld}",
                 sessions[i]);
        json_t *r = query(&b, q);
        CHECK_INT(json_array_size(r), 0);
        json_decref(r);
    }
    /* a's next kernel: ~1/ is a's last session, not b's in between */
    struct history a2;
    REQUIRE(history_open(&a2, path, "/home/a") == 0);
    CHECK(a2.session > b.session && b.session > a.session);
    json_t *r = query(&a2, "{\"hist_access_type\":\"range\",\"session\":-1}");
    REQUIRE(r && json_array_size(r) == 1);
    CHECK_STR(input_of(r, 0), "secret = 'of a'");
    json_decref(r);
    r = query(&a2, "{\"hist_access_type\":\"range\",\"session\":-2}");
    CHECK_INT(json_array_size(r), 0); /* the old session is no workspace's */
    json_decref(r);
    history_close(&a2);
    history_close(&a);
    history_close(&b);
    CHECK_INT(count_in(path, "SELECT count(*) FROM history"), 3); /* old row kept */
}

/* The search's glob answers as SQLite's GLOB does. */
static void test_the_glob_is_sqlites(void)
{
    const char *patterns[] = {
        "*",     "a*",     "*a",     "*a*",    "?",        "??",      "a?c",
        "[abc]", "[^abc]", "[a-c]*", "*[]]*",  "[]a]",     "[^]a]",   "*[-]*",
        "[a-]",  "*b*c*",  "a**c",   "[",      "[abc",     "*[z-a]*", "é*",
        "?x",    "[é]*",   "*\\*",   "x[a-]y", "*[^a-z]*", "",        "a*b?c*[de]",
    };
    const char *texts[] = {
        "",
        "a",
        "abc",
        "ab",
        "ba",
        "]",
        "-",
        "a-",
        "x-y",
        "xay",
        "éa",
        "ée",
        "\\",
        "a\\",
        "aXbYcd",
        "aabbcc",
        "é",
        "ëx",
        "AbC",
        "a]b",
        "bca",
        "zzzzzz",
        "c",
        "ab\\*",
        ("a\xff"
         "b"), /* two literals, so that the escape ends before the b */
        "*",
        "?",
    };
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT ?2 GLOB ?1", -1, &st, NULL) == SQLITE_OK);
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++)
        for (size_t j = 0; j < sizeof texts / sizeof *texts; j++) {
            sqlite3_bind_text(st, 1, patterns[i], -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, texts[j], -1, SQLITE_STATIC);
            REQUIRE(sqlite3_step(st) == SQLITE_ROW);
            int want = sqlite3_column_int(st, 0);
            sqlite3_reset(st);
            int got = history_glob_match(patterns[i], texts[j], NULL);
            if (got != want)
                fprintf(stderr, "    glob %s on %s: %d, SQLite %d\n", patterns[i],
                        texts[j], got, want);
            CHECK_INT(got, want);
        }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* The pattern of the report: "*" and 1,300 classes over a 1 MB cell took
 * SQLite ten seconds a row. Refused for its classes; under the bound, the
 * worst such search stops at the deadline with an error. */
static void test_a_costly_search_is_bounded(void)
{
    char err[256] = "";
    size_t n = 1 + 3 * 1300 + 1;
    char *bad = malloc(n + 1);
    REQUIRE(bad != NULL);
    bad[0] = '*';
    for (size_t i = 0; i < 1300; i++)
        memcpy(bad + 1 + 3 * i, "[a]", 3);
    bad[n - 1] = 'b';
    bad[n] = 0;
    CHECK_INT(history_glob_check(bad, n, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "at most") != NULL);
    /* "*" and 60 classes, a pattern the check accepts */
    bad[1 + 3 * 60] = 'b';
    bad[2 + 3 * 60] = 0;
    CHECK_INT(history_glob_check(bad, strlen(bad), err, sizeof err), 0);
    struct history h;
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    size_t big = 1 << 20;
    char *cell = malloc(big + 1);
    REQUIRE(cell != NULL);
    memset(cell, 'a', big);
    cell[big] = 0;
    for (int i = 1; i <= 20; i++)
        REQUIRE(history_add(&h, i, cell) == 0);
    struct history_query q = {.access = HISTORY_SEARCH, .pattern = bad, .n = -1};
    json_t *r = history_query(&h, &q, 0, 0, err, sizeof err);
    CHECK(r == NULL);
    CHECK(strstr(err, "took longer than") != NULL);
    /* and the next query has a deadline of its own */
    q.pattern = "a*";
    q.n = 1;
    r = history_query(&h, &q, 0, 0, err, sizeof err);
    CHECK_INT(json_array_size(r), 1);
    json_decref(r);
    history_close(&h);
    free(cell);
    free(bad);
}

static void test_a_large_history_is_searched_in_one_pass(void)
{
    struct history h;
    REQUIRE(history_open(&h, NULL, "/ws") == 0);
    char line[64];
    for (int i = 1; i <= 20000; i++) {
        snprintf(line, sizeof line, "value_%d = %d", i % 500, i);
        REQUIRE(history_add(&h, i, line) == 0);
    }
    /* 20,000 inputs, 500 of them different at the start: one row each, the
     * latest; unique would be quadratic if done pair by pair. */
    json_t *r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"value_1*\","
                          "\"unique\":false,\"n\":3}");
    REQUIRE(r && json_array_size(r) == 3);
    CHECK_STR(input_of(r, 2), "value_199 = 19699");
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"value_42 *\"}");
    CHECK_INT(json_array_size(r), 40);
    json_decref(r);
    history_close(&h);
}

static void test_options(void)
{
    struct options o;
    options_init(&o);
    char *argv[] = {"kernel",       "-f",        "/tmp/c.json", "--timeout",    "2.5",
                    "--memory=512", "--network", "on",          "--max-output", "100"};
    char err[256];
    REQUIRE(options_parse(&o, 10, argv, err, sizeof err) == 0);
    CHECK_STR(o.connection_file, "/tmp/c.json");
    CHECK(o.timeout_s == 2.5);
    CHECK_INT(o.memory_mib, 512);
    CHECK(o.network);
    CHECK_INT(o.max_output, 100);
    char **out = NULL;
    int n = options_to_argv(&o, &out, 0);
    CHECK_INT(n, 8);
    CHECK_STR(out[0], "--timeout");
    CHECK_STR(out[1], "2.5");
    for (int i = 0; i < n; i++)
        free(out[i]);
    free(out);
    options_release(&o);

    const char *bad[][3] = {{"kernel", "--timeout", "soon"},
                            {"kernel", "--network", "maybe"},
                            {"kernel", "--bogus", "1"},
                            {"kernel", "--memory", "-5"}};
    for (size_t i = 0; i < 4; i++) {
        options_init(&o);
        err[0] = 0;
        CHECK_INT(options_parse(&o, 3, (char **)bad[i], err, sizeof err), -EINVAL);
        CHECK(err[0] != 0);
        options_release(&o);
    }
}

/* Another workspace's cells are not even matched: a search whose glob would
 * run past the deadline on them answers at once (no timing oracle). */
static void test_a_search_never_reads_another_workspace(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history a, b;
    REQUIRE(history_open(&a, path, "/home/a") == 0);
    REQUIRE(history_open(&b, path, "/home/b") == 0);
    size_t big = 1 << 20;
    char *cell = malloc(big + 1);
    REQUIRE(cell != NULL);
    memset(cell, 'a', big);
    cell[big] = 0;
    for (int i = 1; i <= 10; i++)
        REQUIRE(history_add(&a, i, cell) == 0);
    REQUIRE(history_add(&b, 1, "b = 1") == 0);
    char pattern[256] = "*";
    for (int i = 0; i < 60; i++)
        strcat(pattern, "[a]");
    strcat(pattern, "b");
    for (int unique = 0; unique < 2; unique++) {
        struct history_query q = {
            .access = HISTORY_SEARCH, .pattern = pattern, .n = -1, .unique = unique};
        char err[256] = "";
        json_t *r = history_query(&b, &q, 0, 0, err, sizeof err);
        CHECK(r != NULL);
        if (!r)
            fprintf(stderr, "    %s\n", err);
        CHECK_INT(json_array_size(r), 0);
        json_decref(r);
    }
    history_close(&a);
    history_close(&b);
    free(cell);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_history),
    TESTING_CASE(test_history_queries_are_checked),
    TESTING_CASE(test_history_bounds_keep_the_newest),
    TESTING_CASE(test_history_outlives_the_process_in_its_file),
    TESTING_CASE(test_two_kernels_write_at_once),
    TESTING_CASE(test_a_corrupt_database_leaves_the_history_in_memory),
    TESTING_CASE(test_a_busy_database_keeps_the_cells_waiting),
    TESTING_CASE(test_a_full_queue_gives_the_file_up),
    TESTING_CASE(test_a_link_in_the_database_s_place_is_refused),
    TESTING_CASE(test_each_workspace_sees_its_own_history),
    TESTING_CASE(test_the_glob_is_sqlites),
    TESTING_CASE(test_a_costly_search_is_bounded),
    TESTING_CASE(test_a_search_never_reads_another_workspace),
    TESTING_CASE(test_a_large_history_is_searched_in_one_pass),
    TESTING_CASE(test_options),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
