/* Unit tests for the supervisor's pure parts: the link's framing (whole,
 * split and corrupt streams), the history's queries, and options. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/supervisor/history.h"
#include "kernel/link/link.h"
#include "kernel/options.h"
#include "testing.h"

static void test_link_round_trip(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    struct wire_frame bufs[2] = {{"\x00\x01", 2}, {"", 0}};
    unsigned char *enc;
    size_t len;
    REQUIRE(link_encode("{\"a\":1}", 7, bufs, 2, &enc, &len) == 0);
    /* Written one byte at a time: the reader must assemble the frame. */
    for (size_t i = 0; i < len; i++)
        REQUIRE(write(sv[0], enc + i, 1) == 1);
    REQUIRE(link_write_all(sv[0], enc, len) == 0);
    free(enc);
    struct link_reader r;
    link_reader_init(&r);
    struct link_frame f;
    int got = 0;
    while (got < 2) {
        int rc = link_reader_next(&r, &f);
        REQUIRE(rc >= 0);
        if (rc == 0) {
            REQUIRE(link_reader_fill(&r, sv[1]) > 0);
            continue;
        }
        got++;
        CHECK_STR(f.json, "{\"a\":1}");
        CHECK_INT(f.json_len, 7);
        CHECK_INT(f.nbuffers, 2);
        CHECK(f.buffers[0].len == 2 && memcmp(f.buffers[0].data, "\x00\x01", 2) == 0);
        CHECK_INT(f.buffers[1].len, 0);
        link_frame_release(&f);
    }
    close(sv[0]);
    CHECK_INT(link_reader_fill(&r, sv[1]), 0); /* end of stream */
    link_reader_release(&r);
    close(sv[1]);
}

static void feed(struct link_reader *r, const void *data, size_t len)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE(write(sv[0], data, len) == (ssize_t)len);
    close(sv[0]);
    while (link_reader_fill(r, sv[1]) > 0)
        ;
    close(sv[1]);
}

static void test_link_corrupt(void)
{
    struct link_reader r;
    struct link_frame f;
    /* A body length over the maximum. */
    uint32_t huge[2] = {LINK_MAX_FRAME + 1, 0};
    link_reader_init(&r);
    feed(&r, huge, sizeof huge);
    CHECK_INT(link_reader_next(&r, &f), -EBADMSG);
    link_reader_release(&r);
    /* A JSON length that runs past the body. */
    uint32_t bad_json[3] = {8, 100, 0};
    link_reader_init(&r);
    feed(&r, bad_json, sizeof bad_json);
    CHECK_INT(link_reader_next(&r, &f), -EBADMSG);
    link_reader_release(&r);
    /* A buffer length that runs past the body. */
    unsigned char bad_buf[16];
    uint32_t body = 12, jlen = 0, blen = 50;
    memcpy(bad_buf, &body, 4);
    memcpy(bad_buf + 4, &jlen, 4);
    memcpy(bad_buf + 8, &blen, 4);
    memset(bad_buf + 12, 0, 4);
    link_reader_init(&r);
    feed(&r, bad_buf, 16);
    CHECK_INT(link_reader_next(&r, &f), -EBADMSG);
    link_reader_release(&r);
    /* An incomplete frame is not an error: it waits for the rest. */
    uint32_t partial[2] = {100, 3};
    link_reader_init(&r);
    feed(&r, partial, sizeof partial);
    CHECK_INT(link_reader_next(&r, &f), 0);
    link_reader_release(&r);
}

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
    TESTING_CASE(test_link_round_trip), TESTING_CASE(test_link_corrupt),
    TESTING_CASE(test_history),         TESTING_CASE(test_history_cap),
    TESTING_CASE(test_options),         {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
