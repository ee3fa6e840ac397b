/* Unit tests for the supervisor's pure parts: the history's queries, and
 * options. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/supervisor/history.h"
#include "kernel/options.h"
#include "testing.h"

static json_t *query(struct history *h, const char *json)
{
    json_t *req = json_loads(json, 0, NULL);
    char err[128];
    json_t *out = history_query(h, req, err, sizeof err);
    json_decref(req);
    return out;
}

static void test_history(void)
{
    struct history h;
    history_init(&h, 0);
    history_add(&h, 1, "a = 1");
    history_add(&h, 2, "b = 2");
    history_set_output(&h, 2, "2");
    history_add(&h, 3, "a = 1");
    history_new_session(&h);
    history_add(&h, 1, "c = 3");

    json_t *r = query(&h, "{\"hist_access_type\":\"tail\",\"n\":2}");
    REQUIRE(r && json_array_size(r) == 2);
    CHECK_INT(json_integer_value(json_array_get(json_array_get(r, 1), 0)), 2);
    CHECK_STR(json_string_value(json_array_get(json_array_get(r, 1), 2)), "c = 3");
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"range\",\"session\":-1,\"start\":2,\"stop\":3,"
                  "\"output\":true}");
    REQUIRE(r && json_array_size(r) == 1);
    json_t *pair = json_array_get(json_array_get(r, 0), 2);
    CHECK_STR(json_string_value(json_array_get(pair, 0)), "b = 2");
    CHECK_STR(json_string_value(json_array_get(pair, 1)), "2");
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"range\",\"session\":0}");
    CHECK_INT(json_array_size(r), 1);
    json_decref(r);

    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"a*\"}");
    CHECK_INT(json_array_size(r), 2);
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"a*\",\"unique\":true}");
    REQUIRE(json_array_size(r) == 1);
    CHECK_INT(json_integer_value(json_array_get(json_array_get(r, 0), 1)), 3);
    json_decref(r);
    r = query(&h, "{\"hist_access_type\":\"search\",\"pattern\":\"*\",\"n\":3}");
    CHECK_INT(json_array_size(r), 3);
    json_decref(r);

    json_t *bad = json_loads("{\"hist_access_type\":\"sideways\"}", 0, NULL);
    char err[128] = "";
    CHECK(history_query(&h, bad, err, sizeof err) == NULL);
    CHECK(strstr(err, "sideways") != NULL);
    json_decref(bad);
    history_release(&h);
}

static void test_history_cap(void)
{
    struct history h;
    history_init(&h, 3);
    for (int i = 1; i <= 5; i++)
        history_add(&h, i, "x");
    CHECK_INT(h.len, 3);
    CHECK_INT(h.entries[0].line, 3);
    history_release(&h);
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
    TESTING_CASE(test_history_cap),
    TESTING_CASE(test_options),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
