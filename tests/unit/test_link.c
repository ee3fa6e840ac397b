/* Unit tests for the link: its framing (whole, split and corrupt streams) and
 * its typed frames (every kind built, framed, read back and parsed to the same
 * fields; malformed frames of every kind rejected with a reason). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/link/link.h"
#include "kernel/link/template_msg.h"
#include "kernel/link/worker_exit.h"
#include "testing.h"

static void test_framing_round_trip(void)
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

/* link_write_frame writes the bytes link_encode makes, large buffers included
 * (written by a child, read here, so that the socket's buffer may fill). */
static void test_a_frame_written_in_place_is_the_encoded_frame(void)
{
    size_t big = 3u << 20;
    char *data = malloc(big);
    REQUIRE(data != NULL);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)(i * 7);
    struct wire_frame bufs[3] = {{"", 0}, {data, big}, {"tail", 4}};
    unsigned char *enc;
    size_t len;
    REQUIRE(link_encode("{\"b\":2}", 7, bufs, 3, &enc, &len) == 0);
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(sv[1]);
        _exit(link_write_frame(sv[0], "{\"b\":2}", 7, bufs, 3) == 0 ? 0 : 1);
    }
    close(sv[0]);
    unsigned char *got = malloc(len + 1);
    REQUIRE(got != NULL);
    size_t have = 0;
    ssize_t n;
    while ((n = read(sv[1], got + have, len + 1 - have)) > 0)
        have += (size_t)n;
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(have, len);
    CHECK(have == len && memcmp(got, enc, len) == 0);
    struct wire_frame too_many[LINK_MAX_BUFFERS + 1] = {{0}};
    CHECK_INT(link_write_frame(sv[1], "{}", 2, too_many, LINK_MAX_BUFFERS + 1), -E2BIG);
    close(sv[1]);
    free(got);
    free(enc);
    free(data);
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

static void test_framing_corrupt(void)
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

/* A reader with a bound of its own refuses a larger frame from its first four
 * bytes, before any of its body is buffered; one within the bound passes; and
 * a reader that a large frame grew gives its buffer back once it is empty. */
static void test_a_reader_bounds_frames_and_gives_memory_back(void)
{
    struct link_reader r;
    struct link_frame f;
    link_reader_init(&r);
    link_reader_set_max(&r, 1000);
    uint32_t header[2] = {400u << 20, 10};
    feed(&r, header, sizeof header);
    CHECK_INT(link_reader_next(&r, &f), -EMSGSIZE);
    CHECK_INT(link_reader_pending_size(&r), 400u << 20);
    CHECK(r.cap <= 131072); /* nothing of the 400 MB was waited for */
    link_reader_release(&r);

    link_reader_init(&r);
    link_reader_set_max(&r, 2u << 20);
    size_t big = (1u << 20) + 10;
    char *json = malloc(big + 1);
    REQUIRE(json != NULL);
    memset(json, ' ', big);
    json[0] = '1';
    unsigned char *enc;
    size_t len;
    REQUIRE(link_encode(json, big, NULL, 0, &enc, &len) == 0);
    free(json);
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    int rc = 0;
    size_t sent = 0;
    while (rc != 1) {
        if (sent < len) {
            ssize_t n = write(sv[0], enc + sent, len - sent < 65536 ? len - sent : 65536);
            REQUIRE(n > 0);
            sent += (size_t)n;
        }
        REQUIRE(link_reader_fill(&r, sv[1]) > 0);
        rc = link_reader_next(&r, &f);
        REQUIRE(rc >= 0);
    }
    free(enc);
    CHECK_INT(f.json_len, big);
    link_frame_release(&f);
    CHECK(r.cap > LINK_READER_KEEP);
    CHECK(link_reader_shrink(&r) > LINK_READER_KEEP);
    CHECK(r.buf == NULL && r.cap == 0);
    CHECK_INT(link_reader_shrink(&r), 0);
    /* and it reads on */
    REQUIRE(link_write_all(sv[0],
                           "\x05\0\0\0\x01\0\0\0"
                           "7",
                           9) == 0);
    REQUIRE(link_reader_fill(&r, sv[1]) > 0);
    REQUIRE(link_reader_next(&r, &f) == 1);
    CHECK_STR(f.json, "7");
    link_frame_release(&f);
    link_reader_release(&r);
    close(sv[0]);
    close(sv[1]);

    /* the worker's bound: its caps however JSON escapes them, and a margin */
    CHECK_INT(link_worker_frame_limit(0, 0), LINK_WORKER_FRAME_MAX);
    CHECK_INT(link_worker_frame_limit(10000, 16u << 20),
              60000 + (16u << 20) + LINK_WORKER_FRAME_MARGIN);
}

/* Frames a frame object, reads it back through a reader and decodes it:
 * what the other end of the link does. Returns the decoded object (new). */
static json_t *through_the_link(json_t *frame, enum link_kind want)
{
    REQUIRE(frame != NULL);
    char *text = link_encode_text(frame);
    REQUIRE(text != NULL);
    unsigned char *enc;
    size_t len;
    struct wire_frame buf = {"\x01\x02\x03", 3};
    REQUIRE(link_encode(text, strlen(text), &buf, 1, &enc, &len) == 0);
    free(text);
    struct link_reader r;
    link_reader_init(&r);
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE(link_write_all(sv[0], enc, len) == 0);
    free(enc);
    REQUIRE(link_reader_fill(&r, sv[1]) > 0);
    close(sv[0]);
    close(sv[1]);
    struct link_frame f;
    REQUIRE(link_reader_next(&r, &f) == 1);
    CHECK_INT(f.nbuffers, 1);
    enum link_kind kind;
    json_t *obj;
    char err[256] = "";
    int rc = link_decode(f.json, f.json_len, &kind, &obj, err, sizeof err);
    CHECK_STR(err, "");
    REQUIRE(rc == 0);
    CHECK_INT(kind, want);
    link_frame_release(&f);
    link_reader_release(&r);
    json_decref(frame);
    return obj;
}

static void test_kind_names(void)
{
    /* The wire names: the worker's Python runtime mirrors them. */
    static const char *const names[LINK_KINDS] = {
        "request", "interrupt", "subshell",      "input_reply", "history_reply", "hello",
        "iopub",   "reply",     "input_request", "history",     "log",
    };
    for (int k = 0; k < LINK_KINDS; k++) {
        CHECK_STR(link_kind_name((enum link_kind)k), names[k]);
        CHECK(link_kind_from_worker((enum link_kind)k) == (k >= LINK_HELLO));
    }
}

static void test_every_kind_round_trips(void)
{
    char err[256];
    json_t *header = json_pack("{s:s}", "msg_id", "m-1");
    json_t *content = json_pack("{s:s, s:b}", "code", "1 + 1", "allow_stdin", 1);
    json_t *metadata = json_pack("{s:{s:i}}", "sandpit", "timeout", 5);
    json_t *layers = json_pack("[{s:s, s:s, s:s}]", "name", "seccomp", "state", "active",
                               "detail", "");
    int kinds = 0;

    json_t *o = through_the_link(link_request_build(&(struct link_request){
                                     .shell = "sub-1",
                                     .msg_type = "execute_request",
                                     .header = header,
                                     .content = content,
                                     .metadata = metadata,
                                     .execution_count = 7,
                                     .silent = false,
                                     .store_history = true,
                                     .timeout = 2.5,
                                     .max_output = 10000,
                                 }),
                                 LINK_REQUEST);
    struct link_request rq;
    REQUIRE(link_request_parse(o, &rq, err, sizeof err) == 0);
    CHECK_STR(rq.shell, "sub-1");
    CHECK_STR(rq.msg_type, "execute_request");
    CHECK(json_equal(rq.header, header) && json_equal(rq.content, content) &&
          json_equal(rq.metadata, metadata));
    CHECK_INT(rq.execution_count, 7);
    CHECK(!rq.silent && rq.store_history && rq.timeout == 2.5);
    CHECK_INT(rq.max_output, 10000);
    json_decref(o);
    kinds++;

    o = through_the_link(link_interrupt_build(&(struct link_interrupt){
                             .shell = "", .parent = "m-1", .timeout = true, .limit = 30}),
                         LINK_INTERRUPT);
    struct link_interrupt in;
    REQUIRE(link_interrupt_parse(o, &in, err, sizeof err) == 0);
    CHECK_STR(in.shell, "");
    CHECK_STR(in.parent, "m-1");
    CHECK(in.timeout && in.limit == 30);
    json_decref(o);
    kinds++;

    for (int op = LINK_SUBSHELL_CREATE; op <= LINK_SUBSHELL_DELETE; op++) {
        o = through_the_link(link_subshell_build(&(struct link_subshell){
                                 .op = (enum link_subshell_op)op, .id = "sub-2"}),
                             LINK_SUBSHELL);
        struct link_subshell sub;
        REQUIRE(link_subshell_parse(o, &sub, err, sizeof err) == 0);
        CHECK_INT(sub.op, op);
        CHECK_STR(sub.id, "sub-2");
        json_decref(o);
    }
    kinds++;

    o = through_the_link(link_input_reply_build(&(struct link_input_reply){
                             .parent = "m-1", .content = content}),
                         LINK_INPUT_REPLY);
    struct link_input_reply ir;
    REQUIRE(link_input_reply_parse(o, &ir, err, sizeof err) == 0);
    CHECK_STR(ir.parent, "m-1");
    CHECK(json_equal(ir.content, content));
    json_decref(o);
    kinds++;

    o = through_the_link(link_hello_build(&(struct link_hello){
                             .python_version = "3.11.2", .pid = 42, .sandbox = layers}),
                         LINK_HELLO);
    struct link_hello he;
    REQUIRE(link_hello_parse(o, &he, err, sizeof err) == 0);
    CHECK_STR(he.python_version, "3.11.2");
    CHECK_INT(he.pid, 42);
    CHECK(json_equal(he.sandbox, layers));
    json_decref(o);
    kinds++;

    /* With and without the optional fields. */
    for (int full = 0; full < 2; full++) {
        o = through_the_link(link_iopub_build(&(struct link_iopub){
                                 .msg_type = "display_data",
                                 .parent = full ? "m-1" : NULL,
                                 .content = content,
                                 .metadata = full ? metadata : NULL,
                             }),
                             LINK_IOPUB);
        struct link_iopub io;
        REQUIRE(link_iopub_parse(o, &io, err, sizeof err) == 0);
        CHECK_STR(io.msg_type, "display_data");
        CHECK_STR(io.parent, full ? "m-1" : NULL);
        CHECK(json_equal(io.content, content));
        CHECK(full ? json_equal(io.metadata, metadata) : io.metadata == NULL);
        json_decref(o);

        o = through_the_link(link_reply_build(&(struct link_reply){
                                 .shell = "sub-1",
                                 .parent = "m-1", /* a reply always names it */
                                 .content = content,
                                 .metadata = full ? metadata : NULL,
                             }),
                             LINK_REPLY);
        struct link_reply re;
        REQUIRE(link_reply_parse(o, &re, err, sizeof err) == 0);
        CHECK_STR(re.shell, "sub-1");
        CHECK_STR(re.parent, "m-1");
        CHECK(json_equal(re.content, content));
        CHECK(full ? json_equal(re.metadata, metadata) : re.metadata == NULL);
        json_decref(o);

        o = through_the_link(link_input_request_build(&(struct link_input_request){
                                 .parent = full ? "m-1" : NULL, .content = content}),
                             LINK_INPUT_REQUEST);
        struct link_input_request iq;
        REQUIRE(link_input_request_parse(o, &iq, err, sizeof err) == 0);
        CHECK_STR(iq.parent, full ? "m-1" : NULL);
        CHECK(json_equal(iq.content, content));
        json_decref(o);
    }
    kinds += 3;

    json_t *query = json_pack("{s:s, s:i}", "hist_access_type", "tail", "n", 3);
    o = through_the_link(
        link_history_build(&(struct link_history){.id = 1LL << 40, .query = query}),
        LINK_HISTORY);
    struct link_history hq;
    REQUIRE(link_history_parse(o, &hq, err, sizeof err) == 0);
    CHECK_INT(hq.id, 1LL << 40);
    CHECK(json_equal(hq.query, query));
    json_decref(o);
    json_decref(query);
    kinds++;

    json_t *list = json_pack("[[i, i, s]]", 3, 1, "x = 1");
    for (int refused = 0; refused < 2; refused++) {
        o = through_the_link(link_history_reply_build(&(struct link_history_reply){
                                 .id = 9,
                                 .history = refused ? NULL : list,
                                 .error = refused ? "no such thing" : NULL,
                                 .session = 3}),
                             LINK_HISTORY_REPLY);
        struct link_history_reply hr;
        REQUIRE(link_history_reply_parse(o, &hr, err, sizeof err) == 0);
        CHECK_INT(hr.id, 9);
        CHECK(refused ? hr.history == NULL : json_equal(hr.history, list));
        CHECK_STR(hr.error, refused ? "no such thing" : NULL);
        CHECK_INT(hr.session, 3);
        json_decref(o);
    }
    /* one or the other, never both or neither */
    CHECK(link_history_reply_build(&(struct link_history_reply){.id = 1}) == NULL);
    CHECK(link_history_reply_build(&(struct link_history_reply){
              .id = 1, .history = list, .error = "x"}) == NULL);
    json_decref(list);
    kinds++;

    o = through_the_link(link_log_build(&(struct link_log){.text = "a line"}), LINK_LOG);
    struct link_log lg;
    REQUIRE(link_log_parse(o, &lg, err, sizeof err) == 0);
    CHECK_STR(lg.text, "a line");
    json_decref(o);
    kinds++;
    CHECK_INT(kinds, LINK_KINDS);
    json_decref(header);
    json_decref(content);
    json_decref(metadata);
    json_decref(layers);
}

/* A frame's JSON and the reason it must be refused for: at decoding (kind
 * unknown) or by its kind's parser. */
struct bad_case {
    const char *json;
    const char *reason; /* a part of the sentence in err */
};

static int parse_any(enum link_kind kind, const json_t *obj, char *err, size_t len)
{
    union {
        struct link_request rq;
        struct link_interrupt in;
        struct link_subshell sub;
        struct link_input_reply ir;
        struct link_hello he;
        struct link_iopub io;
        struct link_reply re;
        struct link_input_request iq;
        struct link_history hq;
        struct link_history_reply hr;
        struct link_log lg;
    } u;
    switch (kind) {
    case LINK_REQUEST:
        return link_request_parse(obj, &u.rq, err, len);
    case LINK_INTERRUPT:
        return link_interrupt_parse(obj, &u.in, err, len);
    case LINK_SUBSHELL:
        return link_subshell_parse(obj, &u.sub, err, len);
    case LINK_INPUT_REPLY:
        return link_input_reply_parse(obj, &u.ir, err, len);
    case LINK_HELLO:
        return link_hello_parse(obj, &u.he, err, len);
    case LINK_IOPUB:
        return link_iopub_parse(obj, &u.io, err, len);
    case LINK_REPLY:
        return link_reply_parse(obj, &u.re, err, len);
    case LINK_INPUT_REQUEST:
        return link_input_request_parse(obj, &u.iq, err, len);
    case LINK_HISTORY:
        return link_history_parse(obj, &u.hq, err, len);
    case LINK_HISTORY_REPLY:
        return link_history_reply_parse(obj, &u.hr, err, len);
    case LINK_LOG:
        return link_log_parse(obj, &u.lg, err, len);
    case LINK_KINDS:
        break;
    }
    return 0;
}

static void test_malformed_frames_are_refused(void)
{
    static const struct bad_case cases[] = {
        {"not json", "not JSON"},
        {"[1, 2]", "not an object"},
        {"{\"type\": 3}", "not an object with a \"type\""},
        {"{\"type\": \"bogus\"}", "unknown kind of frame, \"bogus\""},
        {"{\"type\": \"request\", \"shell\": \"\", \"msg_type\": \"execute_request\", "
         "\"content\": {}, \"metadata\": {}}",
         "request: no \"header\""},
        {"{\"type\": \"request\", \"shell\": \"\", \"msg_type\": \"x\", \"header\": {}, "
         "\"content\": {}, \"metadata\": {}, \"timeout\": -1}",
         "\"timeout\" is not a number"},
        {"{\"type\": \"interrupt\", \"shell\": \"\", \"parent\": \"m\", \"reason\": "
         "\"nap\"}",
         "\"reason\" is neither"},
        {"{\"type\": \"subshell\", \"op\": \"rename\", \"id\": \"s\"}",
         "\"op\" is neither"},
        {"{\"type\": \"subshell\", \"op\": \"create\"}", "subshell: no \"id\""},
        {"{\"type\": \"input_reply\", \"parent\": \"m\"}", "input_reply: no \"content\""},
        {"{\"type\": \"log\"}", "log: no \"text\""},
        {"{\"type\": \"hello\", \"python_version\": \"3.11.2\", \"sandbox\": {}}",
         "\"sandbox\" is not a list"},
        {"{\"type\": \"hello\", \"python_version\": \"3.11.2\", \"sandbox\": [{\"name\": "
         "1, "
         "\"state\": \"active\", \"detail\": \"\"}]}",
         "\"name\" is not a string"},
        {"{\"type\": \"hello\", \"python_version\": "
         "\"3.11.2.................................\", \"sandbox\": []}",
         "\"python_version\" is too long"},
        {"{\"type\": \"hello\", \"python_version\": \"3.11.2\", \"pid\": \"1\", "
         "\"sandbox\": []}",
         "\"pid\" is not a whole number"},
        {"{\"type\": \"iopub\", \"msg_type\": \"execute_request\", \"content\": {}}",
         "not a message a worker may publish"},
        {"{\"type\": \"iopub\", \"msg_type\": \"stream\"}", "iopub: no \"content\""},
        {"{\"type\": \"iopub\", \"msg_type\": \"stream\", \"content\": {}, \"metadata\": "
         "5}",
         "\"metadata\" is not an object"},
        {"{\"type\": \"iopub\", \"msg_type\": \"stream\", \"content\": {}, \"parent\": "
         "5}",
         "\"parent\" is not a string"},
        {"{\"type\": \"reply\", \"shell\": \"\", \"parent\": \"m\", \"content\": []}",
         "reply: \"content\" is not an object"},
        {"{\"type\": \"reply\", \"shell\": \"\", \"content\": {}}",
         "reply: no \"parent\""},
        {"{\"type\": \"reply\", \"content\": {}}", "reply: no \"shell\""},
        {"{\"type\": \"reply\", \"shell\": \"a\\u0000b\", \"content\": {}}", "not JSON"},
        {"{\"type\": \"input_request\", \"content\": \"prompt\"}",
         "\"content\" is not an object"},
        {"{\"type\": \"history\", \"query\": {}}", "history: no \"id\""},
        {"{\"type\": \"history\", \"id\": -1, \"query\": {}}",
         "\"id\" is not a whole number in range"},
        {"{\"type\": \"history\", \"id\": 9007199254740992, \"query\": {}}",
         "\"id\" is not a whole number in range"},
        {"{\"type\": \"history\", \"id\": \"1\", \"query\": {}}",
         "\"id\" is not a whole number in range"},
        {"{\"type\": \"history\", \"id\": 1, \"query\": [\"tail\"]}",
         "\"query\" is not an object"},
        {"{\"type\": \"history\", \"id\": 1}", "history: no \"query\""},
        {"{\"type\": \"history_reply\", \"id\": 1}", "neither"},
        {"{\"type\": \"history_reply\", \"id\": 1, \"history\": {}}",
         "\"history\" is not a list"},
        {"{\"type\": \"history_reply\", \"id\": 1, \"history\": [], \"error\": "
         "\"x\"}",
         "or both"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        enum link_kind kind;
        json_t *obj;
        int rc = link_decode(cases[i].json, strlen(cases[i].json), &kind, &obj, err,
                             sizeof err);
        if (rc == 0) {
            rc = parse_any(kind, obj, err, sizeof err);
            json_decref(obj);
        } else {
            CHECK(obj == NULL);
        }
        CHECK_INT(rc, -EBADMSG);
        if (!strstr(err, cases[i].reason))
            CHECK_STR(err, cases[i].reason);
    }
    /* A parser refuses a frame of another kind. */
    json_t *iopub =
        json_pack("{s:s, s:s, s:{}}", "type", "iopub", "msg_type", "stream", "content");
    struct link_reply re;
    char err[256] = "";
    CHECK_INT(link_reply_parse(iopub, &re, err, sizeof err), -EBADMSG);
    CHECK(strstr(err, "another kind") != NULL);
    json_decref(iopub);
    /* A builder refuses a frame without its required fields. */
    CHECK(link_reply_build(&(struct link_reply){.shell = NULL}) == NULL);
    json_t *content = json_object();
    CHECK(link_reply_build(&(struct link_reply){.shell = "", .content = content}) ==
          NULL);
    json_decref(content);
}

/* Whether two descriptors are the same open file (what SCM_RIGHTS passes). */
static bool same_file(int a, int b)
{
    struct stat x, y;
    return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

static int open_count(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

static void test_spawn_requests_and_answers(void)
{
    int sv[2], p[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    REQUIRE(pipe(p) == 0);
    int fds[3] = {p[0], p[1], p[0]};
    REQUIRE(spawn_send_request(sv[0], fds, 3, "v1 group sandpit-1-1") == 0);
    int got[SPAWN_MAX_FDS];
    size_t n = 0;
    char note[SPAWN_NOTE_MAX];
    CHECK_INT(spawn_recv_request(sv[1], got, &n, note, sizeof note), 1);
    REQUIRE(n == 3);
    CHECK(same_file(got[0], p[0]) && same_file(got[1], p[1]) && same_file(got[2], p[0]));
    CHECK(got[0] != p[0] && (fcntl(got[0], F_GETFD) & FD_CLOEXEC));
    CHECK_STR(note, "v1 group sandpit-1-1");
    for (size_t i = 0; i < n; i++)
        close(got[i]);
    /* Too few or too many descriptors are refused before anything is sent. */
    CHECK_INT(spawn_send_request(sv[0], fds, 1, ""), -EINVAL);
    CHECK_INT(spawn_send_request(sv[0], fds, SPAWN_MAX_FDS + 1, ""), -EINVAL);

    enum spawn_answer kind;
    pid_t pid;
    int err;
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), -EAGAIN);
    REQUIRE(spawn_send_ready(sv[1]) == 0);
    REQUIRE(spawn_send_reply(sv[1], 4242, 0) == 0);
    REQUIRE(spawn_send_reply(sv[1], 0, EAGAIN) == 0);
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), 1);
    CHECK(kind == SPAWN_READY && pid == getpid() && err == 0);
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), 1);
    CHECK(kind == SPAWN_REPLY && pid == 4242 && err == 0);
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), 1);
    CHECK(kind == SPAWN_REPLY && pid == 0 && err == EAGAIN);
    close(sv[1]);
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), 0);
    close(sv[0]);
    close(p[0]);
    close(p[1]);
}

static void test_spawn_refuses_what_is_not_its_message(void)
{
    int sv[2], p[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    REQUIRE(pipe(p) == 0);
    int before = open_count();
    /* A datagram of the wrong size, with descriptors: refused, and the
     * descriptors that came with it are not left open in the receiver. */
    char junk[16] = "not a request";
    struct iovec iov = {junk, sizeof junk};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr h = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    memcpy(CMSG_DATA(c), p, sizeof p);
    REQUIRE(sendmsg(sv[0], &h, 0) == (ssize_t)sizeof junk);
    int got[SPAWN_MAX_FDS];
    size_t n = 9;
    CHECK_INT(spawn_recv_request(sv[1], got, &n, NULL, 0), -EBADMSG);
    CHECK_INT((int)n, 0);
    CHECK_INT(open_count(), before);
    /* An answer of the wrong size. */
    REQUIRE(send(sv[1], junk, 3, 0) == 3);
    enum spawn_answer kind;
    pid_t pid;
    int err;
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), -EBADMSG);
    /* A request read as an answer: the descriptors it carries are closed. */
    REQUIRE(spawn_send_request(sv[1], p, 2, "") == 0);
    CHECK_INT(spawn_recv_answer(sv[0], &kind, &pid, &err), -EBADMSG);
    CHECK_INT(open_count(), before);
    close(sv[0]);
    close(sv[1]);
    close(p[0]);
    close(p[1]);
}

/* An iopub frame with "raw" as given (JSON text), parsed. */
static int raw_frame(const char *raw_json, json_t **obj, struct link_iopub *f)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"type\": \"iopub\", \"msg_type\": \"display_data\", "
             "\"content\": {\"data\": {\"text/plain\": \"x\"}, \"n\": 1}, \"raw\": %s}",
             raw_json);
    enum link_kind kind;
    char err[256];
    if (link_decode(text, strlen(text), &kind, obj, err, sizeof err) != 0)
        return -1;
    return link_iopub_parse(*obj, f, err, sizeof err);
}

static void test_raw_text_goes_where_its_path_says(void)
{
    json_t *obj;
    struct link_iopub f;
    REQUIRE(raw_frame("[[\"data\", \"image/png\"], [\"text\"], [\"new\", \"k\"]]", &obj,
                      &f) == 0);
    REQUIRE(f.raw);
    struct wire_frame b[4] = {{"comm buffer", 11},
                              {"iVBOR\"\\\n", 8},
                              {"caf\xc3\xa9 \xf0\x9f\x98\x80", 10},
                              {"", 0}};
    size_t left = 99;
    char err[256] = "";
    CHECK_INT(link_iopub_take_raw(&f, b, 4, &left, err, sizeof err), 0);
    CHECK_INT((int)left, 1);
    json_t *data = json_object_get(f.content, "data");
    CHECK_STR(json_string_value(json_object_get(data, "image/png")), "iVBOR\"\\\n");
    CHECK_STR(json_string_value(json_object_get(data, "text/plain")), "x");
    CHECK_STR(json_string_value(json_object_get(f.content, "text")),
              "caf\xc3\xa9 \xf0\x9f\x98\x80");
    CHECK_STR(json_string_value(json_object_get(json_object_get(f.content, "new"), "k")),
              "");
    json_decref(obj);
}

static void test_raw_text_that_does_not_fit_is_refused(void)
{
    static const struct {
        const char *raw, *text;
        size_t len;
        const char *why;
    } cases[] = {
        {"[[\"text\"]]", "\xc0\xaf", 2, "not UTF-8"},              /* overlong '/' */
        {"[[\"text\"]]", "\xed\xa0\x80", 3, "not UTF-8"},          /* a surrogate */
        {"[[\"text\"]]", "\xf4\x90\x80\x80", 4, "not UTF-8"},      /* past U+10FFFF */
        {"[[\"text\"]]", "ok\xe2\x82", 4, "not UTF-8"},            /* cut short */
        {"[[\"text\"]]", "abcdefgh\0ijklmnop", 17, "holds a NUL"}, /* NUL, fast path */
        {"[[\"n\"]]", "x", 1, "there already"}, /* its place is taken */
        {"[[\"data\", \"text/plain\"]]", "x", 1, "there already"},
        {"[[\"n\", \"k\"]]", "x", 1, "not an object"},
        {"[[\"text\"], [\"more\"]]", "x", 1, "buffers"}, /* two texts, one buffer */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *obj;
        struct link_iopub f;
        REQUIRE(raw_frame(cases[i].raw, &obj, &f) == 0);
        struct wire_frame b = {(void *)cases[i].text, cases[i].len};
        size_t left;
        char err[256] = "";
        CHECK_INT(link_iopub_take_raw(&f, &b, 1, &left, err, sizeof err), -EBADMSG);
        CHECK(strstr(err, cases[i].why) != NULL);
        json_decref(obj);
    }
    /* Paths that are not one or two short keys are refused by the parser. */
    static const char *const bad[] = {"{}", "[[]]", "[[\"a\", \"b\", \"c\"]]", "[[1]]",
                                      "[\"text\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *obj = NULL;
        struct link_iopub f;
        CHECK(raw_frame(bad[i], &obj, &f) != 0);
        json_decref(obj);
    }
}

/* The worker's exit statuses have one name each, and the supervisor's report of
 * a worker's end says it, but only for a status that is sandpit's own. */
static void test_worker_exit_statuses_are_named(void)
{
    CHECK_INT(WORKER_EXIT_USAGE, 2);
    CHECK_INT(WORKER_EXIT_SANDBOX, 3);
    CHECK_INT(WORKER_EXIT_PYTHON, 4);
    CHECK_INT(WORKER_EXIT_OUTPUT, 5);
    CHECK_STR(worker_exit_name(2), "WORKER_EXIT_USAGE");
    CHECK_STR(worker_exit_name(3), "WORKER_EXIT_SANDBOX");
    CHECK_STR(worker_exit_name(4), "WORKER_EXIT_PYTHON");
    CHECK_STR(worker_exit_name(5), "WORKER_EXIT_OUTPUT");
    CHECK_STR(worker_exit_name(127), "WORKER_EXIT_EXEC");
    CHECK(worker_exit_name(9) == NULL);
    CHECK(worker_exit_meaning(9) == NULL);
    for (int status = 0; status < 256; status++)
        CHECK((worker_exit_name(status) == NULL) ==
              (worker_exit_meaning(status) == NULL));
    char how[160];
    worker_exit_describe(3, true, how, sizeof how);
    CHECK_STR(how,
              "exited with status 3 (WORKER_EXIT_SANDBOX: could not confine itself)");
    worker_exit_describe(3, false, how, sizeof how);
    CHECK_STR(how, "exited with status 3");
    worker_exit_describe(9, true, how, sizeof how);
    CHECK_STR(how, "exited with status 9");
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_framing_round_trip),
    TESTING_CASE(test_a_frame_written_in_place_is_the_encoded_frame),
    TESTING_CASE(test_framing_corrupt),
    TESTING_CASE(test_a_reader_bounds_frames_and_gives_memory_back),
    TESTING_CASE(test_kind_names),
    TESTING_CASE(test_every_kind_round_trips),
    TESTING_CASE(test_malformed_frames_are_refused),
    TESTING_CASE(test_raw_text_goes_where_its_path_says),
    TESTING_CASE(test_raw_text_that_does_not_fit_is_refused),
    TESTING_CASE(test_spawn_requests_and_answers),
    TESTING_CASE(test_spawn_refuses_what_is_not_its_message),
    TESTING_CASE(test_worker_exit_statuses_are_named),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
