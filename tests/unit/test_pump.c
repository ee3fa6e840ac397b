/* Unit tests for the worker's output pump, in a process of its own each (the
 * pump takes over fds 1 and 2 and starts a thread). The test holds the
 * supervisor's end of the link and reads the stream messages the pump sends:
 * gathered writes, output of C code, the cap and count of each request
 * (keyed by its tag, so that one request's start does not reset another's),
 * and UTF-8 cut only between characters. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/link/link.h"
#include "kernel/worker/pump.h"
#include "kernel/worker/uplink.h"
#include "testing.h"

static int sup = -1; /* the supervisor's end of the link */
static struct link_reader reader;

/* Gives the pump a link on fd 3 and starts it with a default cap. The test's
 * reports go to a copy of the old stderr, since fd 2 becomes the pump's. */
static void start(unsigned long cap)
{
    int saved = dup(2);
    REQUIRE(saved >= 0);
    FILE *f = fdopen(saved, "w");
    REQUIRE(f != NULL);
    setvbuf(f, NULL, _IONBF, 0);
    stderr = f;
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE(dup2(sv[0], UPLINK_FD) == UPLINK_FD);
    close(sv[0]);
    sup = sv[1];
    uplink_init();
    link_reader_init(&reader);
    REQUIRE(pump_start(cap) == 0);
}

struct stream {
    char name[8];
    char text[256];
    char parent[64];
};

/* The next message from the pump, waiting at most wait_ms. false if none. */
static bool next_stream(struct stream *s, int wait_ms)
{
    struct link_frame f;
    int rc;
    while ((rc = link_reader_next(&reader, &f)) == 0) {
        struct pollfd p = {.fd = sup, .events = POLLIN};
        if (poll(&p, 1, wait_ms) <= 0)
            return false;
        REQUIRE(link_reader_fill(&reader, sup) > 0);
    }
    REQUIRE(rc == 1);
    enum link_kind kind;
    json_t *obj;
    char err[256];
    REQUIRE(link_decode(f.json, f.json_len, &kind, &obj, err, sizeof err) == 0);
    struct link_iopub io;
    REQUIRE(kind == LINK_IOPUB && link_iopub_parse(obj, &io, err, sizeof err) == 0);
    CHECK_STR(io.msg_type, "stream");
    snprintf(s->name, sizeof s->name, "%s",
             json_string_value(json_object_get(io.content, "name")));
    snprintf(s->text, sizeof s->text, "%s",
             json_string_value(json_object_get(io.content, "text")));
    snprintf(s->parent, sizeof s->parent, "%s", io.parent ? io.parent : "");
    json_decref(obj);
    link_frame_release(&f);
    return true;
}

/* Checks the next message's stream, text and request. */
#define EXPECT(name_, text_, parent_)                                                    \
    do {                                                                                 \
        struct stream s_;                                                                \
        REQUIRE(next_stream(&s_, 5000));                                                 \
        CHECK_STR(s_.name, name_);                                                       \
        CHECK_STR(s_.text, text_);                                                       \
        CHECK_STR(s_.parent, parent_);                                                   \
    } while (0)

static void expect_nothing_more(void)
{
    struct stream s;
    if (next_stream(&s, 0))
        CHECK_STR(s.text, "(nothing more)");
}

static void put(const char *tag, const char *text)
{
    pump_write(1, text, strlen(text), tag);
}

static void test_a_print_is_one_message(void)
{
    start(0);
    put("A", "x");
    put("A", "\n");
    pump_flush();
    EXPECT("stdout", "x\n", "A");
    expect_nothing_more();
    /* another request's output starts another message */
    put("A", "1");
    put("B", "2");
    pump_flush();
    EXPECT("stdout", "1", "A");
    EXPECT("stdout", "2", "B");
}

static void test_output_goes_out_without_a_flush(void)
{
    start(0);
    put("A", "hello\n");
    EXPECT("stdout", "hello\n", "A"); /* within the gathering window */
}

static void test_output_of_c_code_goes_to_the_default_request(void)
{
    start(0);
    pump_set_default_tag("M");
    REQUIRE(write(1, "from fd 1\n", 10) == 10);
    REQUIRE(write(2, "from fd 2\n", 10) == 10);
    pump_flush();
    EXPECT("stdout", "from fd 1\n", "M");
    EXPECT("stderr", "from fd 2\n", "M");
}

static void test_each_request_has_its_own_count(void)
{
    start(0);
    pump_begin("A", 10);
    put("A", "aaaaaaaaaaaaaaaaaaaaaaaaa"); /* 25 bytes: 15 past A's cap */
    pump_begin("B", 10);                   /* a subshell's cell starts */
    put("B", "bbbbb");
    CHECK_INT(pump_end("B"), 0);
    CHECK_INT(pump_end("A"), 15);
    EXPECT("stdout", "aaaaaaaaaa", "A");
    EXPECT("stdout", "bbbbb", "B");
    expect_nothing_more();
}

static void test_late_output_counts_against_its_request(void)
{
    start(0);
    pump_begin("A", 10);
    put("A", "12345678");
    CHECK_INT(pump_end("A"), 0);
    put("A", "abcdefgh"); /* a thread the cell started writes on */
    pump_flush();
    EXPECT("stdout", "12345678", "A");
    EXPECT("stdout", "ab", "A");
    /* the same tag begun again starts from nothing */
    pump_begin("A", 10);
    put("A", "0123456789");
    CHECK_INT(pump_end("A"), 0);
    EXPECT("stdout", "0123456789", "A");
}

static void test_a_request_without_account_has_the_default_cap(void)
{
    start(5);
    put("T", "12345678");
    pump_flush();
    EXPECT("stdout", "12345", "T");
    CHECK_INT(pump_end("T"), 3);
}

static void test_utf8_is_cut_between_characters(void)
{
    start(0);
    put("A", "\xc3");      /* the first byte of "é"... */
    put("A", "\xa9\xff!"); /* ...its second, then a byte that is not UTF-8 */
    pump_flush();
    EXPECT("stdout", "\xc3\xa9\xef\xbf\xbd!", "A");
    pump_begin("C", 3);
    put("C", "ab\xc3\xa9"); /* the cap falls inside "é" */
    CHECK_INT(pump_end("C"), 2);
    EXPECT("stdout", "ab", "C");
}

static void test_a_huge_write_is_counted_not_kept(void)
{
    start(0);
    size_t n = 8u << 20;
    char *big = malloc(n);
    REQUIRE(big != NULL);
    memset(big, 'z', n);
    pump_begin("G", 10);
    pump_write(1, big, n, "G");
    free(big);
    CHECK_INT(pump_end("G"), n - 10);
    EXPECT("stdout", "zzzzzzzzzz", "G");
    expect_nothing_more();
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_print_is_one_message),
    TESTING_CASE(test_output_goes_out_without_a_flush),
    TESTING_CASE(test_output_of_c_code_goes_to_the_default_request),
    TESTING_CASE(test_each_request_has_its_own_count),
    TESTING_CASE(test_late_output_counts_against_its_request),
    TESTING_CASE(test_a_request_without_account_has_the_default_cap),
    TESTING_CASE(test_utf8_is_cut_between_characters),
    TESTING_CASE(test_a_huge_write_is_counted_not_kept),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
