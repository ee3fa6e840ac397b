/* e2b_result: a cell's Jupyter messages as the NDJSON of E2B's POST /execute,
 * the shapes E2B's SDK parses, and what a hostile kernel message cannot make
 * of them (wrong types dropped, extras and tracebacks capped). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/e2b_result.h"
#include "testing.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECKED 1
#else
#define LEAK_CHECKED 0
#endif

#define DATE "2026-01-02T03:04:05.000006Z"

/* content parsed from text (REQUIREd to parse; caller decrefs). */
static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &err);
    if (!v)
        fprintf(stderr, "fixture does not parse: %s\n", err.text);
    REQUIRE(v != NULL);
    return v;
}

/* Converts (msg_type, content text) in cell c; returns rc, *out the object. */
static int convert(struct e2b_result_cell *c, const char *type, const char *content,
                   json_t **out)
{
    json_t *v = parse(content);
    int rc = e2b_result_convert(c, type, DATE, v, out);
    json_decref(v);
    return rc;
}

/* The object as its line, without the newline (new, caller frees). */
static char *line_of(const json_t *o)
{
    char *line;
    size_t len;
    REQUIRE(e2b_result_line(o, &line, &len) == 0);
    REQUIRE(len >= 1 && line[len - 1] == '\n');
    line[len - 1] = '\0';
    return line;
}

static void check_line(const json_t *o, const char *want)
{
    char *got = line_of(o);
    CHECK_STR(got, want);
    free(got);
}

static void test_stdout_and_stderr_carry_their_text_and_the_date(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(convert(&c, "stream", "{\"name\": \"stdout\", \"text\": \"hi\\n\"}", &o),
              0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"stdout\",\"text\":\"hi\\n\",\"timestamp\":\"" DATE "\"}");
    json_decref(o);
    CHECK_INT(convert(&c, "stream", "{\"name\": \"stderr\", \"text\": \"oops\"}", &o), 0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"stderr\",\"text\":\"oops\",\"timestamp\":\"" DATE "\"}");
    json_decref(o);
    /* Without a date in the header: no timestamp, as E2B leaves a None out. */
    json_t *v = parse("{\"name\": \"stdout\", \"text\": \"x\"}");
    CHECK_INT(e2b_result_convert(&c, "stream", NULL, v, &o), 0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"stdout\",\"text\":\"x\"}");
    json_decref(o);
    json_decref(v);
}

static void test_a_stream_of_another_name_or_type_is_not_sent(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o = (json_t *)1;
    CHECK_INT(convert(&c, "stream", "{\"name\": \"stdin\", \"text\": \"x\"}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "stream", "{\"name\": \"stdout\", \"text\": 5}", &o), -EINVAL);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "stream", "{\"name\": [\"stdout\"], \"text\": \"x\"}", &o),
              -EINVAL);
    CHECK_INT(convert(&c, "stream", "{\"text\": \"x\"}", &o), -EINVAL);
    CHECK(o == NULL);
}

static void test_the_main_result_has_e2b_names_and_an_empty_extra(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(convert(&c, "execute_result",
                      "{\"execution_count\": 3, \"metadata\": {}, \"data\": "
                      "{\"text/html\": \"<b>42</b>\", \"text/plain\": \"42\"}}",
                      &o),
              0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"result\",\"text\":\"42\",\"html\":\"<b>42</b>\","
                  "\"extra\":{},\"is_main_result\":true}");
    json_decref(o);
}

static void test_a_quoted_text_loses_its_quotes_as_e2b_strips_them(void)
{
    static const char *const cases[][2] = {
        {"\"'mine'\"", "mine"}, {"\"\\\"two\\\"\"", "two"}, {"\"'\"", ""},
        {"\"''\"", ""},         {"\"'a\\\"\"", "'a\""},     {"\"'é'\"", "é"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct e2b_result_cell c;
        e2b_result_cell_init(&c);
        char content[128];
        snprintf(content, sizeof content, "{\"data\": {\"text/plain\": %s}}",
                 cases[i][0]);
        json_t *o;
        CHECK_INT(convert(&c, "execute_result", content, &o), 0);
        REQUIRE(o != NULL);
        CHECK_STR(json_string_value(json_object_get(o, "text")), cases[i][1]);
        json_decref(o);
    }
}

static void test_a_display_has_every_format_and_the_rest_in_extra(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(
        convert(&c, "display_data",
                "{\"data\": {\"image/png\": \"iVBORw0KGgo=\", \"text/plain\": "
                "\"<Figure>\", \"application/json\": {\"a\": 1}, \"image/svg+xml\": "
                "\"<svg/>\", \"text/markdown\": \"*m*\", \"text/latex\": \"$x$\", "
                "\"image/jpeg\": \"/9j/\", \"application/pdf\": \"JVBE\", "
                "\"application/javascript\": \"f()\", \"e2b/chart\": {\"type\": "
                "\"line\"}, \"application/vnd.custom+json\": [1, 2], \"text/x-mine\": "
                "\"m\"}, \"metadata\": {}, \"transient\": {}}",
                &o),
        0);
    REQUIRE(o != NULL);
    check_line(o,
               "{\"type\":\"result\",\"text\":\"<Figure>\",\"markdown\":\"*m*\","
               "\"svg\":\"<svg/>\",\"png\":\"iVBORw0KGgo=\",\"jpeg\":\"/9j/\","
               "\"pdf\":\"JVBE\",\"latex\":\"$x$\",\"json\":{\"a\":1},"
               "\"javascript\":\"f()\",\"chart\":{\"type\":\"line\"},"
               "\"extra\":{\"application/vnd.custom+json\":[1,2],\"text/x-mine\":\"m\"},"
               "\"is_main_result\":false}");
    json_decref(o);
}

static void test_a_known_format_of_the_wrong_type_is_dropped(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(convert(&c, "display_data",
                      "{\"data\": {\"image/png\": 5, \"text/plain\": {\"x\": 1}, "
                      "\"application/json\": [1], \"e2b/data\": \"s\", \"text/html\": "
                      "null}}",
                      &o),
              0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"result\",\"extra\":{},\"is_main_result\":false}");
    json_decref(o);
    CHECK_INT(convert(&c, "display_data", "{\"data\": [\"image/png\"]}", &o), -EINVAL);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "execute_result", "{\"metadata\": {}}", &o), -EINVAL);
    CHECK(o == NULL);
}

static void test_extra_formats_are_capped(void)
{
    json_t *data = json_object();
    REQUIRE(data != NULL);
    for (int i = 0; i < 3 * E2B_RESULT_MAX_EXTRA; i++) {
        char mime[32];
        snprintf(mime, sizeof mime, "text/x-%d", i);
        json_object_set_new(data, mime, json_string("v"));
    }
    json_object_set_new(data, "text/plain", json_string("kept"));
    json_t *content = json_pack("{so}", "data", data);
    REQUIRE(content != NULL);
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(e2b_result_convert(&c, "display_data", DATE, content, &o), 0);
    REQUIRE(o != NULL);
    CHECK_INT(json_object_size(json_object_get(o, "extra")), E2B_RESULT_MAX_EXTRA);
    CHECK(json_object_get(json_object_get(o, "extra"), "text/x-0") != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "text")), "kept");
    json_decref(o);
    json_decref(content);
}

static void test_an_error_joins_its_traceback_and_is_sent_once(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(
        convert(&c, "error",
                "{\"ename\": \"ZeroDivisionError\", \"evalue\": \"division by zero\", "
                "\"traceback\": [\"Traceback:\\n\", 7, \"  f()\\n\", null, "
                "\"ZeroDivisionError: division by zero\"]}",
                &o),
        0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":"
                  "\"division by zero\",\"traceback\":\"Traceback:\\n  f()\\n"
                  "ZeroDivisionError: division by zero\"}");
    json_decref(o);
    CHECK(c.errored);
    /* E2B sends one error a cell: a second one, or the reply's, is not sent. */
    CHECK_INT(convert(&c, "error",
                      "{\"ename\": \"E\", \"evalue\": \"\", \"traceback\": []}", &o),
              0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "execute_reply",
                      "{\"status\": \"error\", \"ename\": \"ZeroDivisionError\"}", &o),
              0);
    CHECK(o == NULL);
}

static void test_an_error_of_the_wrong_types_still_says_there_was_one(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(convert(&c, "error", "{\"ename\": 3, \"traceback\": \"not a list\"}", &o),
              0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"error\",\"name\":\"\",\"value\":\"\",\"traceback\":\"\"}");
    json_decref(o);
}

static void test_a_long_traceback_is_capped(void)
{
    json_t *tb = json_array();
    REQUIRE(tb != NULL);
    for (int i = 0; i < E2B_RESULT_MAX_TRACEBACK + 100; i++)
        json_array_append_new(tb, json_string("x"));
    json_t *content =
        json_pack("{s:s,s:s,s:o}", "ename", "E", "evalue", "v", "traceback", tb);
    REQUIRE(content != NULL);
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(e2b_result_convert(&c, "error", DATE, content, &o), 0);
    REQUIRE(o != NULL);
    CHECK_INT(json_string_length(json_object_get(o, "traceback")),
              E2B_RESULT_MAX_TRACEBACK);
    json_decref(o);
    json_decref(content);
}

static void test_an_error_only_in_the_reply_is_sent(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(convert(&c, "execute_reply",
                      "{\"status\": \"error\", \"ename\": \"KeyboardInterrupt\", "
                      "\"evalue\": \"\", \"traceback\": [\"KeyboardInterrupt\"]}",
                      &o),
              0);
    REQUIRE(o != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "name")), "KeyboardInterrupt");
    json_decref(o);
    CHECK(c.errored);
    CHECK(!c.ended);
    e2b_result_cell_init(&c);
    CHECK_INT(convert(&c, "execute_reply", "{\"status\": \"ok\"}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "execute_reply", "{\"status\": \"abort\"}", &o), 0);
    REQUIRE(o != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "name")), "ExecutionAborted");
    json_decref(o);
    CHECK(c.ended);
    CHECK_INT(convert(&c, "execute_reply", "{\"status\": 1}", &o), -EINVAL);
}

static void test_the_input_gives_the_number_of_executions(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    CHECK_INT(
        convert(&c, "execute_input", "{\"code\": \"1\", \"execution_count\": 7}", &o), 0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"number_of_executions\",\"execution_count\":7}");
    json_decref(o);
    CHECK(c.input_accepted);
    e2b_result_cell_init(&c);
    CHECK_INT(convert(&c, "execute_input", "{\"execution_count\": \"7\"}", &o), -EINVAL);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "execute_input", "{\"execution_count\": 7.5}", &o), -EINVAL);
}

static void test_the_cell_ends_at_idle_once_taken_or_at_a_restart(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o;
    /* An idle before the cell was taken is another request's. */
    CHECK_INT(convert(&c, "status", "{\"execution_state\": \"idle\"}", &o), 0);
    CHECK(o == NULL);
    CHECK(!c.ended);
    CHECK_INT(convert(&c, "status", "{\"execution_state\": \"busy\"}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "status", "{\"execution_state\": \"idle\"}", &o), 0);
    CHECK(o == NULL);
    CHECK(c.ended);
    e2b_result_cell_init(&c);
    CHECK_INT(convert(&c, "status", "{\"execution_state\": \"restarting\"}", &o), 0);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"error\",\"name\":\"ContextRestarting\",\"value\":"
                  "\"Context was restarted\",\"traceback\":\"\"}");
    json_decref(o);
    CHECK(c.ended);
    CHECK_INT(convert(&c, "status", "{\"execution_state\": null}", &o), -EINVAL);
}

static void test_other_messages_and_malformed_ones_send_nothing(void)
{
    struct e2b_result_cell c;
    e2b_result_cell_init(&c);
    json_t *o = (json_t *)1;
    CHECK_INT(convert(&c, "clear_output", "{\"wait\": false}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(
        convert(&c, "update_display_data", "{\"data\": {\"text/plain\": \"x\"}}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "comm_msg", "{}", &o), 0);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "stream", "[\"stdout\", \"x\"]", &o), -EINVAL);
    CHECK(o == NULL);
    CHECK_INT(convert(&c, "stream", "\"text\"", &o), -EINVAL);
    json_t *v = parse("{}");
    CHECK_INT(e2b_result_convert(&c, NULL, DATE, v, &o), -EINVAL);
    CHECK_INT(e2b_result_convert(&c, "stream", DATE, NULL, &o), -EINVAL);
    CHECK(o == NULL);
    json_decref(v);
}

static void test_a_line_is_ascii_with_one_newline_at_its_end(void)
{
    json_t *o = json_pack("{s:s,s:s}", "type", "stdout", "text",
                          "h\xc3\xa9llo\n\xf0\x9f\x98\x80 two\r\n\xe2\x80\xa8");
    REQUIRE(o != NULL);
    char *line;
    size_t len;
    REQUIRE(e2b_result_line(o, &line, &len) == 0);
    CHECK_INT(len, strlen(line));
    for (size_t i = 0; i < len; i++)
        CHECK((unsigned char)line[i] < 0x80);
    CHECK(strchr(line, '\n') == line + len - 1);
    CHECK(strchr(line, '\r') == NULL);
    CHECK(strstr(line, "\\u00E9") != NULL);
    CHECK(strstr(line, "\\uD83D\\uDE00") != NULL);
    /* It reads back as what it was. */
    json_t *back = json_loadb(line, len, 0, NULL);
    CHECK(back != NULL && json_equal(back, o));
    json_decref(back);
    free(line);
    json_decref(o);
    CHECK_INT(e2b_result_line(NULL, &line, &len), -EINVAL);
    CHECK(line == NULL);
}

static void test_the_route_s_own_lines(void)
{
    json_t *o = e2b_result_keepalive();
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"keepalive\"}");
    json_decref(o);
    o = e2b_result_end();
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"end_of_execution\"}");
    json_decref(o);
    o = e2b_result_error("TimeoutError", "the cell ran past its limit", NULL);
    REQUIRE(o != NULL);
    check_line(o, "{\"type\":\"error\",\"name\":\"TimeoutError\",\"value\":"
                  "\"the cell ran past its limit\",\"traceback\":\"\"}");
    json_decref(o);
    CHECK(e2b_result_error("\xff", "v", "") == NULL);
}

static const struct testing_case *every_case(void);

/* The runner ends each test with _exit, where LeakSanitizer does not look:
 * under AddressSanitizer this one runs every other test in its process and
 * then asks it. Every reference a result shares with its content is counted
 * here: one too few would show as a use after free, one too many as a leak. */
static void test_nothing_leaks(void)
{
    for (const struct testing_case *t = every_case(); t->name; t++)
        if (t->fn != test_nothing_leaks)
            t->fn();
#if LEAK_CHECKED
    CHECK_INT(__lsan_do_recoverable_leak_check(), 0);
#endif
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_stdout_and_stderr_carry_their_text_and_the_date),
    TESTING_CASE(test_a_stream_of_another_name_or_type_is_not_sent),
    TESTING_CASE(test_the_main_result_has_e2b_names_and_an_empty_extra),
    TESTING_CASE(test_a_quoted_text_loses_its_quotes_as_e2b_strips_them),
    TESTING_CASE(test_a_display_has_every_format_and_the_rest_in_extra),
    TESTING_CASE(test_a_known_format_of_the_wrong_type_is_dropped),
    TESTING_CASE(test_extra_formats_are_capped),
    TESTING_CASE(test_an_error_joins_its_traceback_and_is_sent_once),
    TESTING_CASE(test_an_error_of_the_wrong_types_still_says_there_was_one),
    TESTING_CASE(test_a_long_traceback_is_capped),
    TESTING_CASE(test_an_error_only_in_the_reply_is_sent),
    TESTING_CASE(test_the_input_gives_the_number_of_executions),
    TESTING_CASE(test_the_cell_ends_at_idle_once_taken_or_at_a_restart),
    TESTING_CASE(test_other_messages_and_malformed_ones_send_nothing),
    TESTING_CASE(test_a_line_is_ascii_with_one_newline_at_its_end),
    TESTING_CASE(test_the_route_s_own_lines),
    TESTING_CASE(test_nothing_leaks),
    {0},
};

static const struct testing_case *every_case(void)
{
    return cases;
}

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
