/* Unit tests for the supervisor's pure parts: the history (its database and
 * queries), and options. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>

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
    REQUIRE(history_open(&h, NULL) == 0);
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
    REQUIRE(history_open(&h, NULL) == 0);
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
    REQUIRE(history_open(&h, path) == 0);
    CHECK(h.path != NULL); /* kept in the file */
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0600); /* the user's alone */
    history_add(&h, 1, "first = 1");
    history_add(&h, 2, "first");
    history_set_output(&h, 2, "1");
    long long before = h.session;
    history_close(&h);

    REQUIRE(history_open(&h, path) == 0);
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
    REQUIRE(history_open(&a, path) == 0);
    REQUIRE(history_open(&b, path) == 0);
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
    REQUIRE(history_open(&h, path) == 0);
    CHECK(h.path == NULL);
    CHECK_INT(history_add(&h, 1, "still = 1"), 0);
    json_t *r = query(&h, "{\"hist_access_type\":\"tail\"}");
    REQUIRE(r && json_array_size(r) == 1);
    CHECK_STR(input_of(r, 0), "still = 1");
    json_decref(r);
    history_close(&h);
}

static void test_a_locked_database_is_given_up_for_memory(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/history.sqlite", temp_dir());
    struct history h;
    REQUIRE(history_open(&h, path) == 0);
    CHECK_INT(history_add(&h, 1, "before = 1"), 0);
    /* Another writer holds the lock for longer than the busy timeout. */
    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(path, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_INT(history_add(&h, 2, "during = 2"), 0);
    CHECK(h.path == NULL);
    /* in memory, with the session's cells so far */
    json_t *r = query(&h, "{\"hist_access_type\":\"range\"}");
    REQUIRE(r && json_array_size(r) == 2);
    CHECK_STR(input_of(r, 0), "before = 1");
    CHECK_STR(input_of(r, 1), "during = 2");
    json_decref(r);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    history_close(&h);
}

static void test_a_large_history_is_searched_in_one_pass(void)
{
    struct history h;
    REQUIRE(history_open(&h, NULL) == 0);
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

static const struct testing_case cases[] = {
    TESTING_CASE(test_history),
    TESTING_CASE(test_history_queries_are_checked),
    TESTING_CASE(test_history_bounds_keep_the_newest),
    TESTING_CASE(test_history_outlives_the_process_in_its_file),
    TESTING_CASE(test_two_kernels_write_at_once),
    TESTING_CASE(test_a_corrupt_database_leaves_the_history_in_memory),
    TESTING_CASE(test_a_locked_database_is_given_up_for_memory),
    TESTING_CASE(test_a_large_history_is_searched_in_one_pass),
    TESTING_CASE(test_options),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
