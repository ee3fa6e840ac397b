/* Unit tests for protocol/: connection files, signing, wire framing and
 * message parsing. Signing is checked against vectors computed with Python's
 * hmac module (tests/unit/fixtures/sign/); malformed input of every kind must
 * give an error return, never a crash. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/connection.h"
#include "protocol/dump.h"
#include "protocol/load.h"
#include "protocol/msg.h"
#include "protocol/sign.h"
#include "protocol/utf8.h"
#include "protocol/wire.h"
#include "testing.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    char *buf = malloc(1 << 20);
    REQUIRE(buf != NULL);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

/* --- connection ------------------------------------------------------------------ */

static const char good_conn[] =
    "{\"shell_port\": 5001, \"iopub_port\": 5002, \"stdin_port\": 5003, "
    "\"control_port\": 5004, \"hb_port\": 5005, \"ip\": \"127.0.0.1\", "
    "\"key\": \"a0436f6c-1916\", \"transport\": \"tcp\", "
    "\"signature_scheme\": \"hmac-sha256\", \"kernel_name\": \"sandpit\"}";

static void test_connection_parse(void)
{
    struct connection c;
    char err[256] = "";
    REQUIRE(connection_parse(&c, good_conn, strlen(good_conn), err, sizeof err) == 0);
    CHECK_STR(c.transport, "tcp");
    CHECK_STR(c.ip, "127.0.0.1");
    CHECK_INT(c.ports[CONNECTION_SHELL], 5001);
    CHECK_INT(c.ports[CONNECTION_IOPUB], 5002);
    CHECK_INT(c.ports[CONNECTION_STDIN], 5003);
    CHECK_INT(c.ports[CONNECTION_CONTROL], 5004);
    CHECK_INT(c.ports[CONNECTION_HB], 5005);
    CHECK_INT(c.key_len, 13);
    CHECK(memcmp(c.key, "a0436f6c-1916", 13) == 0);
    CHECK_STR(c.signature_scheme, "hmac-sha256");
    CHECK_STR(c.kernel_name, "sandpit");
    char ep[128];
    CHECK(connection_endpoint(&c, CONNECTION_CONTROL, ep, sizeof ep) == 0);
    CHECK_STR(ep, "tcp://127.0.0.1:5004");
    connection_release(&c);
}

static void test_connection_ipc_and_defaults(void)
{
    const char *text = "{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, "
                       "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"/tmp/k\", "
                       "\"transport\": \"ipc\"}";
    struct connection c;
    char err[256];
    REQUIRE(connection_parse(&c, text, strlen(text), err, sizeof err) == 0);
    CHECK_INT(c.key_len, 0);
    CHECK_STR(c.signature_scheme, "hmac-sha256");
    CHECK_STR(c.kernel_name, "");
    char ep[128];
    CHECK(connection_endpoint(&c, CONNECTION_HB, ep, sizeof ep) == 0);
    CHECK_STR(ep, "ipc:///tmp/k-5");
    connection_release(&c);
}

static void expect_bad_conn(const char *text, const char *fragment)
{
    struct connection c;
    char err[256] = "";
    int rc = connection_parse(&c, text, strlen(text), err, sizeof err);
    CHECK_INT(rc, -EINVAL);
    if (!strstr(err, fragment)) {
        fprintf(stderr, "    error \"%s\" does not mention \"%s\"\n", err, fragment);
        CHECK(0);
    }
}

static void test_connection_errors(void)
{
    expect_bad_conn("not json", "not valid JSON");
    expect_bad_conn("[1, 2]", "not a JSON object");
    expect_bad_conn("{\"ip\": \"127.0.0.1\"}", "shell_port");
    expect_bad_conn("{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, "
                    "\"control_port\": 4, \"hb_port\": 5}",
                    "\"ip\"");
    expect_bad_conn("{\"shell_port\": \"1\", \"iopub_port\": 2, \"stdin_port\": 3, "
                    "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"x\"}",
                    "shell_port");
    expect_bad_conn("{\"shell_port\": 70000, \"iopub_port\": 2, \"stdin_port\": 3, "
                    "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"x\"}",
                    "shell_port");
    expect_bad_conn(
        "{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, "
        "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"x\", \"transport\": \"udp\"}",
        "transport");
    expect_bad_conn("{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, "
                    "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"x\", "
                    "\"signature_scheme\": \"hmac-md5\"}",
                    "hmac-md5");
    expect_bad_conn("{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, "
                    "\"control_port\": 4, \"hb_port\": 5, \"ip\": \"x\", \"key\": 7}",
                    "key");
}

static void test_connection_load_missing(void)
{
    struct connection c;
    char err[256] = "";
    int rc = connection_load(&c, "/nonexistent/kernel-x.json", err, sizeof err);
    CHECK_INT(rc, -ENOENT);
    CHECK(strstr(err, "/nonexistent/kernel-x.json") != NULL);
}

static void test_connection_load_file(void)
{
    char path[] = "/tmp/sandpit-conn-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    testing_remove_after(path);
    REQUIRE(write(fd, good_conn, strlen(good_conn)) == (ssize_t)strlen(good_conn));
    close(fd);
    struct connection c;
    char err[256];
    CHECK(connection_load(&c, path, err, sizeof err) == 0);
    CHECK_INT(c.ports[CONNECTION_HB], 5005);
    connection_release(&c);
}

/* --- signing ---------------------------------------------------------------------- */

static void check_vector(const char *name)
{
    static const char *const files[4] = {"header.json", "parent.json", "metadata.json",
                                         "content.json"};
    char path[512];
    size_t len[4], key_len, sig_len;
    char *data[4];
    struct sign_part parts[4];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "sign/%s/%s", name, files[i]);
        data[i] = read_file(testing_fixture(path), &len[i]);
        parts[i].data = data[i];
        parts[i].len = len[i];
    }
    snprintf(path, sizeof path, "sign/%s/key", name);
    char *key = read_file(testing_fixture(path), &key_len);
    snprintf(path, sizeof path, "sign/%s/signature", name);
    char *want = read_file(testing_fixture(path), &sig_len);

    struct sign s;
    REQUIRE(sign_init(&s, "hmac-sha256", (unsigned char *)key, key_len) == 0);
    char hex[SIGN_HEX_LEN + 1];
    CHECK(sign_compute(&s, parts, hex) == 0);
    CHECK_STR(hex, want);
    CHECK(sign_verify(&s, parts, want, sig_len));
    /* One flipped digit, a truncated or an empty signature: rejected. */
    char digit = want[5];
    want[5] = want[5] == '0' ? '1' : '0';
    CHECK(!sign_verify(&s, parts, want, sig_len));
    CHECK(!sign_verify(&s, parts, want, sig_len - 1));
    CHECK(!sign_verify(&s, parts, "", 0));
    /* The same digest with non-hex characters is not accepted either. */
    CHECK(!sign_verify(&s, parts, "zz", 2));
    /* Upper case spells the same digest, but it is not the form clients send. */
    want[5] = digit;
    CHECK(sign_verify(&s, parts, want, sig_len));
    char upper[SIGN_HEX_LEN + 1];
    for (size_t i = 0; i <= SIGN_HEX_LEN; i++)
        upper[i] = (char)(want[i] >= 'a' && want[i] <= 'f' ? want[i] - 32 : want[i]);
    CHECK(strcmp(upper, want) != 0);
    CHECK(!sign_verify(&s, parts, upper, sig_len));
    sign_release(&s);
    for (int i = 0; i < 4; i++)
        free(data[i]);
    free(key);
    free(want);
}

static void test_sign_vectors(void)
{
    check_vector("simple");
    check_vector("unicode");
    check_vector("long-key");
    check_vector("empty-parts");
    /* A key of one block is used as it is; one byte longer, its digest is. */
    check_vector("block-key");
    check_vector("block-key-plus-one");
}

static void test_sign_empty_key(void)
{
    struct sign s;
    REQUIRE(sign_init(&s, "hmac-sha256", NULL, 0) == 0);
    CHECK(!s.enabled);
    struct sign_part parts[4] = {{"{}", 2}, {"{}", 2}, {"{}", 2}, {"{}", 2}};
    char hex[SIGN_HEX_LEN + 1];
    CHECK(sign_compute(&s, parts, hex) == 0);
    CHECK_STR(hex, "");
    CHECK(sign_verify(&s, parts, "", 0));
    sign_release(&s);
    CHECK_INT(sign_init(&s, "hmac-md5", (const unsigned char *)"k", 1), -EINVAL);
}

/* --- wire and msg ------------------------------------------------------------------ */

#define F(s)                                                                             \
    {                                                                                    \
        (void *)(s), sizeof(s) - 1                                                       \
    }

static void test_wire_split(void)
{
    struct wire_frame frames[] = {F("id1"),  F("id2"), F("<IDS|MSG>"), F("sig"),
                                  F("{}"),   F("{}"),  F("{}"),        F("{}"),
                                  F("buf1"), F("buf2")};
    struct wire_parts p;
    char err[128];
    REQUIRE(wire_split(frames, 10, &p, err, sizeof err) == 0);
    CHECK_INT(p.nidents, 2);
    CHECK_INT(p.nbuffers, 2);
    CHECK(p.signature == &frames[3]);
    CHECK(p.json[WIRE_CONTENT] == &frames[7]);
    /* No identities at all is fine (a DEALER peer with no routing prefix). */
    REQUIRE(wire_split(frames + 2, 6, &p, err, sizeof err) == 0);
    CHECK_INT(p.nidents, 0);
    CHECK_INT(p.nbuffers, 0);
}

static void test_wire_malformed(void)
{
    struct wire_frame no_delim[] = {F("id"), F("sig"), F("{}"),
                                    F("{}"), F("{}"),  F("{}")};
    struct wire_frame too_few[] = {F("id"), F("<IDS|MSG>"), F("sig"), F("{}"), F("{}")};
    struct wire_parts p;
    char err[128];
    CHECK_INT(wire_split(no_delim, 6, &p, err, sizeof err), -EBADMSG);
    CHECK(strstr(err, "delimiter") != NULL);
    CHECK_INT(wire_split(too_few, 5, &p, err, sizeof err), -EBADMSG);
    CHECK_INT(wire_split(NULL, 0, &p, err, sizeof err), -EBADMSG);
    /* Too many identities. */
    struct wire_frame many[WIRE_MAX_IDENTS + 6];
    for (int i = 0; i < WIRE_MAX_IDENTS + 1; i++)
        many[i] = (struct wire_frame)F("id");
    many[WIRE_MAX_IDENTS + 1] = (struct wire_frame)F("<IDS|MSG>");
    for (int i = WIRE_MAX_IDENTS + 2; i < WIRE_MAX_IDENTS + 6; i++)
        many[i] = (struct wire_frame)F("{}");
    CHECK_INT(wire_split(many, WIRE_MAX_IDENTS + 6, &p, err, sizeof err), -EBADMSG);
    /* An oversized JSON part (its length alone is checked; no data is read). */
    struct wire_frame big[] = {F("<IDS|MSG>"), F(""), F("{}"), F("{}"), F("{}"), F("{}")};
    big[5].len = (size_t)WIRE_MAX_JSON + 1;
    CHECK_INT(wire_split(big, 6, &p, err, sizeof err), -EBADMSG);
    CHECK(strstr(err, "JSON part") != NULL);
}

/* Signs four JSON texts with key "k" and returns frames for msg_parse. */
static struct wire_frame *signed_frames(const char *h, const char *p, const char *m,
                                        const char *c, struct sign *s, size_t *n)
{
    static char hex[SIGN_HEX_LEN + 1];
    struct sign_part parts[4] = {
        {h, strlen(h)}, {p, strlen(p)}, {m, strlen(m)}, {c, strlen(c)}};
    sign_compute(s, parts, hex);
    static struct wire_frame f[7];
    f[0] = (struct wire_frame){"client", 6};
    f[1] = (struct wire_frame){"<IDS|MSG>", 9};
    f[2] = (struct wire_frame){hex, strlen(hex)};
    f[3] = (struct wire_frame){(void *)h, strlen(h)};
    f[4] = (struct wire_frame){(void *)p, strlen(p)};
    f[5] = (struct wire_frame){(void *)m, strlen(m)};
    f[6] = (struct wire_frame){(void *)c, strlen(c)};
    *n = 7;
    return f;
}

static const char hdr[] = "{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\"}";

/* Parses a signed message that must fail with want; returns the error sentence
 * (a static buffer). With -EPROTO, the partial message must carry the header. */
static const char *expect_parse_error(const char *h, const char *p, const char *m,
                                      const char *c, int want)
{
    struct sign s;
    sign_init(&s, "hmac-sha256", (const unsigned char *)"k", 1);
    size_t n;
    struct wire_frame *f = signed_frames(h, p, m, c, &s, &n);
    struct msg *msg = (struct msg *)1;
    static char err[128];
    err[0] = 0;
    CHECK_INT(msg_parse(f, n, &s, &msg, err, sizeof err), want);
    if (want == -EPROTO) {
        REQUIRE(msg != NULL);
        CHECK_STR(msg_id(msg), "m1");
        CHECK_STR(msg_type(msg), "execute_request");
        CHECK_INT(msg->nidents, 1);
        CHECK(json_is_object(msg->parent_header) &&
              json_object_size(msg->parent_header) == 0);
        CHECK(json_is_object(msg->content) && json_object_size(msg->content) == 0);
        CHECK(json_is_object(msg->metadata) && json_object_size(msg->metadata) == 0);
        msg_free(msg);
    } else {
        CHECK(msg == NULL);
    }
    CHECK(err[0] != 0);
    sign_release(&s);
    return err;
}

/* A JSON text of depth levels: [[[...]]] (caller frees). */
static char *nested(size_t depth)
{
    char *t = malloc(2 * depth + 1);
    REQUIRE(t != NULL);
    memset(t, '[', depth);
    memset(t + depth, ']', depth);
    t[2 * depth] = 0;
    return t;
}

static void test_msg_parse_malformed(void)
{
    expect_parse_error("not json", "{}", "{}", "{}", -EBADMSG);
    expect_parse_error("[]", "{}", "{}", "{}", -EBADMSG);
    expect_parse_error("{\"msg_id\":\"m\"}", "{}", "{}", "{}", -EBADMSG);
    expect_parse_error("{\"msg_id\":\"m\",\"msg_type\":7}", "{}", "{}", "{}", -EBADMSG);
    expect_parse_error("{\"msg_id\":\"m\",\"msg_type\":\"\"}", "{}", "{}", "{}",
                       -EBADMSG);
    expect_parse_error("{\"msg_type\":\"x\"}", "{}", "{}", "{}", -EBADMSG);
    /* A readable header: the caller gets it, to answer the sender. */
    expect_parse_error(hdr, "null", "{}", "{}", -EPROTO);
    expect_parse_error(hdr, "{}", "\"str\"", "{}", -EPROTO);
    expect_parse_error(hdr, "{}", "{}", "[1,2", -EPROTO);
    expect_parse_error(hdr, "{}", "{}", "{\"a\":\"\\ud800\"}", -EPROTO);
    expect_parse_error(hdr, "{}", "{}", "{\"a\":\"\\u0000\"}", -EPROTO);
    expect_parse_error(hdr, "{}", "{}", "{\"a\":\"\xff\xfe\"}", -EPROTO);
    expect_parse_error(hdr, "{}", "{}", "{\"a\":\"\xed\xa0\x80\"}", -EPROTO);
    /* ... and one whose header is unreadable cannot be answered. */
    expect_parse_error("{\"msg_id\":\"m\\u0000\",\"msg_type\":\"x\"}", "{}", "{}", "{}",
                       -EBADMSG);
}

static void test_msg_nesting(void)
{
    /* At the limit: parsed. */
    char *deep = nested(MSG_MAX_DEPTH - 1), content[2 * MSG_MAX_DEPTH + 16];
    snprintf(content, sizeof content, "{\"a\":%s}", deep);
    free(deep);
    struct sign s;
    sign_init(&s, "hmac-sha256", (const unsigned char *)"k", 1);
    size_t n;
    struct wire_frame *f = signed_frames(hdr, "{}", "{}", content, &s, &n);
    struct msg *m = NULL;
    char err[128];
    CHECK(msg_parse(f, n, &s, &m, err, sizeof err) == 0);
    msg_free(m);
    sign_release(&s);
    /* One more level, and the 1,000 to 2,047 that jansson would parse but Python's
     * json.loads refuses: an error the sender can be told about. */
    size_t depths[] = {MSG_MAX_DEPTH + 1, 1000, 2047, 100000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        char *text = nested(depths[i]);
        CHECK(strstr(expect_parse_error(hdr, "{}", text, "{}", -EPROTO),
                     "metadata nests deeper than 256 levels") != NULL);
        free(text);
    }
    /* Brackets inside strings are text, not nesting. */
    char *text = nested(1000), *str = malloc(2000 + 16);
    REQUIRE(str != NULL);
    snprintf(str, 2000 + 16, "{\"a\":\"%s\\\"\"}", text);
    sign_init(&s, "hmac-sha256", (const unsigned char *)"k", 1);
    f = signed_frames(hdr, "{}", "{}", str, &s, &n);
    CHECK(msg_parse(f, n, &s, &m, err, sizeof err) == 0);
    msg_free(m);
    sign_release(&s);
    free(text);
    free(str);
    /* A deep header cannot be answered. */
    char deep_hdr[2 * MSG_MAX_DEPTH + 64];
    deep = nested(MSG_MAX_DEPTH);
    snprintf(deep_hdr, sizeof deep_hdr,
             "{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\",\"x\":%s}", deep);
    free(deep);
    CHECK(strstr(expect_parse_error(deep_hdr, "{}", "{}", "{}", -EBADMSG),
                 "header nests deeper") != NULL);
}

static void test_msg_replay(void)
{
    struct sign s;
    sign_init(&s, "hmac-sha256", (const unsigned char *)"k", 1);
    size_t n;
    struct wire_frame *f = signed_frames(hdr, "{}", "{}", "{\"code\":\"1\"}", &s, &n);
    struct msg *m = NULL;
    char err[128];
    REQUIRE(msg_parse(f, n, &s, &m, err, sizeof err) == 0);
    msg_free(m);
    /* The same frames again: refused, with no message. */
    m = (struct msg *)1;
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EALREADY);
    CHECK(m == NULL);
    CHECK(strstr(err, "replay") != NULL);
    /* Another message is accepted; then SIGN_HISTORY more, and the first is still
     * refused: the history holds at least that many. */
    char content[64];
    for (int i = 0; i <= SIGN_HISTORY; i++) {
        snprintf(content, sizeof content, "{\"code\":\"%d\"}", i + 2);
        f = signed_frames(hdr, "{}", "{}", content, &s, &n);
        m = NULL;
        int rc = msg_parse(f, n, &s, &m, err, sizeof err);
        if (rc != 0) {
            CHECK_INT(rc, 0);
            break;
        }
        msg_free(m);
    }
    f = signed_frames(hdr, "{}", "{}", "{\"code\":\"1\"}", &s, &n);
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EALREADY);
    /* A replay of a message with an unreadable part is refused as well. */
    f = signed_frames(hdr, "{}", "{}", "[", &s, &n);
    m = NULL;
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EPROTO);
    msg_free(m);
    m = NULL;
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EALREADY);
    sign_release(&s);
}

static void test_msg_bad_signature(void)
{
    struct sign s, other;
    sign_init(&s, "hmac-sha256", (const unsigned char *)"k", 1);
    sign_init(&other, "hmac-sha256", (const unsigned char *)"not-k", 5);
    size_t n;
    struct wire_frame *f = signed_frames(hdr, "{}", "{}", "{}", &other, &n);
    struct msg *m = NULL;
    char err[128];
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EACCES);
    CHECK_STR(err, "bad signature");
    f[2].len = 0;
    CHECK_INT(msg_parse(f, n, &s, &m, err, sizeof err), -EACCES);
    CHECK_STR(err, "missing signature");
    /* With no key, the same message is accepted. */
    struct sign none;
    sign_init(&none, "hmac-sha256", NULL, 0);
    CHECK(msg_parse(f, n, &none, &m, err, sizeof err) == 0);
    msg_free(m);
    sign_release(&s);
    sign_release(&other);
}

static void test_msg_round_trip(void)
{
    struct sign s;
    sign_init(&s, "hmac-sha256", (const unsigned char *)"secret", 6);
    struct msg_session sess;
    REQUIRE(msg_session_init(&sess, "tester") == 0);
    CHECK_INT(strlen(sess.session), 36);

    size_t n;
    struct wire_frame *f = signed_frames(hdr, "{}", "{}", "{\"code\":\"1\"}", &s, &n);
    struct msg *req = NULL;
    char err[128];
    REQUIRE(msg_parse(f, n, &s, &req, err, sizeof err) == 0);
    CHECK_STR(msg_type(req), "execute_request");
    CHECK_STR(msg_id(req), "m1");
    CHECK_INT(req->nidents, 1);

    json_t *content = json_pack("{s:s, s:i}", "status", "ok", "execution_count", 3);
    struct msg *reply = msg_make(&sess, "execute_reply", req, &content, true);
    REQUIRE(reply != NULL);
    CHECK(content == NULL);
    CHECK(msg_add_buffer(reply, "\x00\x01\x02", 3) == 0);
    struct wire_frame *out;
    size_t nout;
    REQUIRE(msg_serialize(reply, &s, &out, &nout) == 0);
    CHECK_INT(nout, 1 + 1 + 1 + 4 + 1);
    CHECK(out[0].len == 6 && memcmp(out[0].data, "client", 6) == 0);

    struct msg *back = NULL;
    REQUIRE(msg_parse(out, nout, &s, &back, err, sizeof err) == 0);
    CHECK_STR(msg_type(back), "execute_reply");
    CHECK_STR(json_string_value(json_object_get(back->parent_header, "msg_id")), "m1");
    CHECK_STR(json_string_value(json_object_get(back->header, "session")), sess.session);
    CHECK_STR(json_string_value(json_object_get(back->header, "username")), "tester");
    CHECK_STR(json_string_value(json_object_get(back->header, "version")),
              MSG_PROTOCOL_VERSION);
    CHECK_INT(json_integer_value(json_object_get(back->content, "execution_count")), 3);
    CHECK_INT(back->nbuffers, 1);
    CHECK(back->buffers[0].len == 3 &&
          memcmp(back->buffers[0].data, "\x00\x01\x02", 3) == 0);
    /* Fresh ids: a second message from the session has another msg_id. */
    struct msg *second = msg_make(&sess, "status", req, NULL, false);
    CHECK(strcmp(msg_id(second), msg_id(reply)) != 0);
    CHECK_INT(second->nidents, 0);

    msg_free(second);
    msg_free(back);
    wire_frames_free(out, nout);
    msg_free(reply);
    msg_free(req);
    sign_release(&s);
}

static void test_msg_date(void)
{
    char d[40];
    msg_date_now(d, sizeof d);
    /* 2024-01-02T03:04:05.000006Z: 27 characters, microseconds zero-padded. */
    CHECK_INT(strlen(d), 27);
    CHECK(d[4] == '-' && d[7] == '-' && d[10] == 'T' && d[13] == ':' && d[16] == ':');
    CHECK(d[19] == '.' && d[26] == 'Z');
    for (int i = 20; i < 26; i++)
        CHECK(d[i] >= '0' && d[i] <= '9');
}

/* A string of n bytes with every kind of byte a JSON string escapes in it. */
static json_t *large_string(size_t n, unsigned seed)
{
    char *s = malloc(n);
    static const char mix[] = "ab\"\\\n\t\r\b\f\x01\x1f/\x7f\xc3\xa9z";
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (i * 7 + seed) % 26);
    /* whole UTF-8 sequences only: é is copied as its two bytes */
    for (size_t i = 0; i + sizeof mix < n; i += 997)
        memcpy(s + i, mix, sizeof mix - 1);
    s[n / 2] = 0; /* jansson strings may hold NUL */
    json_t *v = json_stringn(s, n);
    free(s);
    return v;
}

/* dump_part's text must parse back to the object, whatever holds its large
 * strings, and be jansson's own text when it holds none. */
static void check_dump(json_t *v)
{
    size_t len = 0;
    char *text = dump_part(v, &len);
    REQUIRE(text);
    json_error_t e;
    json_t *back = json_loadb(text, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
    if (!back)
        fprintf(stderr, "    not JSON: %s at %d: %.60s\n", e.text, e.position,
                text + (e.position > 20 ? e.position - 20 : 0));
    CHECK(back != NULL);
    CHECK(json_equal(back, v));
    json_decref(back);
    free(text);
}

static void test_dump_splices_large_strings(void)
{
    size_t big = DUMP_LARGE_STRING + 3;
    json_t *stream =
        json_pack("{s:s, s:o}", "name", "stdout", "text", large_string(big, 1));
    check_dump(stream);
    json_t *display = json_pack(
        "{s:{s:s, s:o, s:o}, s:{s:{s:i}}, s:{}}", "data", "text/plain", "<Figure>",
        "image/png", large_string(big, 2), "text/html", large_string(2 * big, 3),
        "metadata", "image/png", "width", 640, "transient");
    check_dump(display);
    /* large strings only, at both depths, and keys that need escaping */
    json_t *only = json_pack("{s:o, s:{s:o}}", "t\"x\n", large_string(big, 4), "d", "k\\",
                             large_string(big, 5));
    check_dump(only);
    /* more large strings than are spliced: the rest go through jansson */
    json_t *many = json_object();
    json_t *data = json_object();
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        json_object_set_new(data, key, large_string(big, (unsigned)i));
    }
    json_object_set_new(many, "data", data);
    check_dump(many);
    /* deeper than one level is jansson's, and so is a part with nothing large */
    json_t *deep = json_pack("{s:{s:{s:o}}, s:[o]}", "a", "b", "c", large_string(big, 6),
                             "l", large_string(big, 7));
    check_dump(deep);
    json_t *small = json_pack("{s:s, s:[i, n, b]}", "a", "b", "c", 1, 1);
    size_t len;
    char *ours = dump_part(small, &len), *theirs = json_dumps(small, JSON_COMPACT);
    CHECK_STR(ours, theirs);
    free(ours);
    free(theirs);
    json_t *str = json_string("not an object");
    check_dump(str);
    json_decref(str);
    json_decref(small);
    json_decref(deep);
    json_decref(many);
    json_decref(only);
    json_decref(display);
    json_decref(stream);
}

/* The escaping itself, byte for byte as jansson writes it. */
static void test_dump_string_escapes_as_jansson_does(void)
{
    char all[256];
    for (int i = 0; i < 128; i++)
        all[i] = (char)i;
    size_t n = 128;
    char *out = malloc(dump_string_size(all, n) + 1);
    size_t w = dump_string(out, all, n);
    CHECK_INT((int)w, (int)dump_string_size(all, n));
    out[w] = 0;
    json_t *v = json_stringn(all, n);
    char *theirs = json_dumps(v, JSON_ENCODE_ANY);
    CHECK_STR(out, theirs);
    free(theirs);
    json_decref(v);
    free(out);
}

/* dump_string of in (n bytes) is what jansson writes for v, the same text. */
static void check_escapes_as_jansson(const json_t *v, const char *in, size_t n)
{
    char *theirs = json_dumps(v, JSON_ENCODE_ANY);
    char *out = malloc(dump_string_size(in, n) + 1);
    size_t w = dump_string(out, in, n);
    out[w] = 0;
    CHECK_INT((int)w, (int)strlen(theirs));
    CHECK_STR(out, theirs);
    free(out);
    free(theirs);
}

/* Each byte that needs an escape, at each place in eight-byte words of plain
 * text (ASCII and UTF-8), as jansson writes it: the escaper looks at eight bytes
 * at a time. */
static void test_dump_string_escapes_at_every_place(void)
{
    static const char plain[] = "xy z\xc3\xa9~\x7f\xe2\x82\xac"
                                "0123456789abcdefghijkl";
    size_t n = sizeof plain - 1;
    for (int c = 0; c < 0x80; c++) {
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
            continue;
        for (size_t at = 0; at < n; at++) {
            char in[64];
            memcpy(in, plain, n);
            in[at] = (char)c;
            /* a UTF-8 sequence cut by the byte is not text jansson takes */
            json_t *v = json_stringn(in, n);
            if (!v)
                continue;
            check_escapes_as_jansson(v, in, n);
            json_decref(v);
        }
    }
}

/* Two bytes that need an escape, at every two places of sixteen plain bytes:
 * the escaper takes the first one a word holds for where its run ends, and a
 * byte that borrows in the word's test may flag those after it. */
static void test_dump_string_escapes_two_in_a_word(void)
{
    static const char escapes[] = {'\x01', '\x1f', '"', '\\', '\n', '\x00'};
    for (size_t a = 0; a < sizeof escapes; a++)
        for (size_t b = 0; b < sizeof escapes; b++)
            for (size_t i = 0; i < 16; i++)
                for (size_t j = i + 1; j < 16; j++) {
                    char in[16];
                    memset(in, ' ', sizeof in);
                    in[i] = escapes[a];
                    in[j] = escapes[b];
                    json_t *v = json_stringn(in, sizeof in);
                    check_escapes_as_jansson(v, in, sizeof in);
                    json_decref(v);
                }
}

/* load_part_from against jansson, on texts and on many mutations of them, with
 * every string taken as large from a few bytes on: both refuse, or both give
 * equal values. */
static int same_as_jansson(const char *text, size_t len, size_t min)
{
    json_error_t e1, e2;
    json_t *ours = load_part_from(text, len, min, &e1);
    json_t *theirs = json_loadb(text, len, 0, &e2);
    int same = (!ours && !theirs) || (ours && theirs && json_equal(ours, theirs));
    json_decref(ours);
    json_decref(theirs);
    return same;
}

static void test_load_takes_and_refuses_what_jansson_does(void)
{
    static const char *const texts[] = {
        "{\"name\":\"stdout\",\"text\":\"hello\\nworld\"}",
        "{\"data\":{\"text/plain\":\"1\",\"image/"
        "png\":\"iVBORw0KGgo=\"},\"metadata\":{}}",
        "{\"a\":\"\\u00e9\\ud83d\\ude00\\u20ac\\\"\\\\\\/"
        "\\b\\f\\n\\r\\t\",\"b\":[\"x\",\"yy\"]}",
        "{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\"k\xc3\xa9y\":\"v\"}",
        "{\"long key that is a key\":\"v\", \"x\" : \"a value\" }",
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00x\"}",
        "{\"a\":\"\\ud800\\u0041\"}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"\\u12\"}",
        "{\"a\":\"\x01\"}",
        "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"unterminated}",
        "{\"a\":\"x\" \"b\":\"y\"}",
        "{\"a\":\"\\\\\"}",
        "{\"a\":\"\\\\\\\"\"}",
        "[\"\\u0000sandpit-large:0\",\"long enough\"]",
        "{\"a\":\"one\",\"b\":\"two\",\"c\":[\"three\",{\"d\":\"four\"}],\"e\":\"\"}",
    };
    size_t ntexts = sizeof texts / sizeof *texts;
    for (size_t t = 0; t < ntexts; t++)
        for (size_t min = 1; min <= 8; min *= 2)
            CHECK(same_as_jansson(texts[t], strlen(texts[t]), min));
    static const char bytes[] = "\"\\u/bnDdCc80\x01\x1f\x7f\x80\xc3\xa9\xed\xf4:{}[], ";
    uint32_t seed = 12345;
    int differ = 0;
    for (int round = 0; round < 40000; round++) {
        const char *base = texts[round % ntexts];
        size_t len = strlen(base);
        char buf[256];
        memcpy(buf, base, len);
        for (int k = 0; k < 1 + round % 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            buf[at] = bytes[(seed >> 8) % (sizeof bytes - 1)];
        }
        size_t min = 1 + (size_t)(round % 5);
        if (!same_as_jansson(buf, len, min) && differ++ < 5)
            fprintf(stderr, "    load and jansson differ on %.*s (min %zu)\n", (int)len,
                    buf, min);
    }
    CHECK_INT(differ, 0);
}

/* --- utf8 ------------------------------------------------------------------------ */

struct utf8_case {
    const char *bytes;
    size_t len;
    bool valid;
    const char *what;
};

#define U8(s, v, what)                                                                   \
    {                                                                                    \
        s, sizeof s - 1, v, what                                                         \
    }

/* Markus Kuhn's UTF-8 decoder stress test, section by section: the boundary
 * characters, the malformed sequences, the overlong forms and the
 * surrogates. */
static const struct utf8_case utf8_cases[] = {
    U8("", true, "empty"),
    U8("\x00", true, "U+0000 is a character"),
    U8("\x7f", true, "U+007F"),
    U8("\xc2\x80", true, "U+0080, the first 2-byte"),
    U8("\xdf\xbf", true, "U+07FF"),
    U8("\xe0\xa0\x80", true, "U+0800, the first 3-byte"),
    U8("\xed\x9f\xbf", true, "U+D7FF"),
    U8("\xee\x80\x80", true, "U+E000"),
    U8("\xef\xbf\xbd", true, "U+FFFD"),
    U8("\xef\xbf\xbf", true, "U+FFFF (a noncharacter, but well-formed)"),
    U8("\xf0\x90\x80\x80", true, "U+10000, the first 4-byte"),
    U8("\xf4\x8f\xbf\xbf", true, "U+10FFFF, the last"),
    U8("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", true, "Kuhn's kosme"),
    U8("\xf4\x90\x80\x80", false, "U+110000, past the last"),
    U8("\xf7\xbf\xbf\xbf", false, "U+1FFFFF"),
    U8("\xf8\x88\x80\x80\x80", false, "a 5-byte form"),
    U8("\xfb\xbf\xbf\xbf\xbf", false, "the last 5-byte form"),
    U8("\xfc\x84\x80\x80\x80\x80", false, "a 6-byte form"),
    U8("\xfd\xbf\xbf\xbf\xbf\xbf", false, "the last 6-byte form"),
    U8("\xfe", false, "0xFE"),
    U8("\xff", false, "0xFF"),
    U8("\xfe\xfe\xff\xff", false, "0xFE 0xFE 0xFF 0xFF"),
    U8("\x80", false, "a lone first continuation byte"),
    U8("\xbf", false, "a lone last continuation byte"),
    U8("\x80\xbf\x80", false, "three continuation bytes"),
    U8("\xc0 ", false, "a 2-byte start and a space"),
    U8("\xe0\x80 ", false, "a 3-byte start cut short, then a space"),
    U8("\xc2", false, "a 2-byte sequence cut short"),
    U8("\xe0\xa0", false, "a 3-byte sequence cut short"),
    U8("\xf0\x90\x80", false, "a 4-byte sequence cut short"),
    U8("\xdf", false, "U+07FF's last byte missing"),
    U8("\xef\xbf", false, "U+FFFF's last byte missing"),
    U8("\xf4\x8f\xbf", false, "U+10FFFF's last byte missing"),
    U8("a\xc2\xe0\xa0\xf0\x90\x80", false, "the cut sequences together"),
    U8("\xc0\xaf", false, "an overlong '/' in 2 bytes"),
    U8("\xe0\x80\xaf", false, "an overlong '/' in 3 bytes"),
    U8("\xf0\x80\x80\xaf", false, "an overlong '/' in 4 bytes"),
    U8("\xf8\x80\x80\x80\xaf", false, "an overlong '/' in 5 bytes"),
    U8("\xfc\x80\x80\x80\x80\xaf", false, "an overlong '/' in 6 bytes"),
    U8("\xc1\xbf", false, "the largest overlong 2-byte"),
    U8("\xe0\x9f\xbf", false, "the largest overlong 3-byte"),
    U8("\xf0\x8f\xbf\xbf", false, "the largest overlong 4-byte"),
    U8("\xc0\x80", false, "an overlong NUL in 2 bytes"),
    U8("\xe0\x80\x80", false, "an overlong NUL in 3 bytes"),
    U8("\xf0\x80\x80\x80", false, "an overlong NUL in 4 bytes"),
    U8("\xed\xa0\x80", false, "U+D800, a lone high surrogate"),
    U8("\xed\xad\xbf", false, "U+DB7F"),
    U8("\xed\xae\x80", false, "U+DB80"),
    U8("\xed\xaf\xbf", false, "U+DBFF"),
    U8("\xed\xb0\x80", false, "U+DC00, a lone low surrogate"),
    U8("\xed\xbe\x80", false, "U+DF80"),
    U8("\xed\xbf\xbf", false, "U+DFFF"),
    U8("\xed\xa0\x80\xed\xb0\x80", false, "U+D800 U+DC00, a pair in CESU-8"),
    U8("\xed\xaf\xbf\xed\xbf\xbf", false, "U+DBFF U+DFFF"),
    U8("abcdefgh\xc0\x80", false, "after eight ASCII bytes"),
    U8("abcdefghijklmnop\xed\xa0\x80xyz", false, "a surrogate after sixteen"),
};

static void test_utf8_is_rfc_3629(void)
{
    for (size_t i = 0; i < sizeof utf8_cases / sizeof *utf8_cases; i++) {
        const struct utf8_case *c = &utf8_cases[i];
        if (utf8_valid(c->bytes, c->len) != c->valid)
            fprintf(stderr, "  utf8: %s: %s\n", c->what, c->valid ? "refused" : "taken");
        CHECK(utf8_valid(c->bytes, c->len) == c->valid);
    }
}

static void test_utf8_tells_cut_from_invalid(void)
{
    const unsigned char *u = (const unsigned char *)"\xf0\x90\x80\x80";
    CHECK_INT(utf8_seq(u, 4), 4);
    CHECK_INT(utf8_seq(u, 3), -1);
    CHECK_INT(utf8_seq(u, 1), -1);
    CHECK_INT(utf8_seq((const unsigned char *)"\xe2\x82\xac", 2), -1);
    CHECK_INT(utf8_seq((const unsigned char *)"A", 1), 1);
    /* a wrong second byte is known at once, however little follows */
    CHECK_INT(utf8_seq((const unsigned char *)"\xed\xa0", 2), 0);
    CHECK_INT(utf8_seq((const unsigned char *)"\xe0\x80", 2), 0);
    CHECK_INT(utf8_seq((const unsigned char *)"\xf4\x90", 2), 0);
    CHECK_INT(utf8_seq((const unsigned char *)"\xc0", 1), 0);
    CHECK_INT(utf8_seq((const unsigned char *)"\xf5", 1), 0);
    CHECK_INT((int)utf8_valid_prefix("abc\xe2\x82\xac"
                                     "d\xc0\x80",
                                     9),
              7);
    CHECK_INT((int)utf8_valid_prefix("0123456789\xe2\x82", 12), 10);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_connection_parse),
    TESTING_CASE(test_connection_ipc_and_defaults),
    TESTING_CASE(test_connection_errors),
    TESTING_CASE(test_connection_load_missing),
    TESTING_CASE(test_connection_load_file),
    TESTING_CASE(test_sign_vectors),
    TESTING_CASE(test_sign_empty_key),
    TESTING_CASE(test_wire_split),
    TESTING_CASE(test_wire_malformed),
    TESTING_CASE(test_msg_parse_malformed),
    TESTING_CASE(test_msg_nesting),
    TESTING_CASE(test_msg_replay),
    TESTING_CASE(test_msg_bad_signature),
    TESTING_CASE(test_msg_round_trip),
    TESTING_CASE(test_msg_date),
    TESTING_CASE(test_dump_splices_large_strings),
    TESTING_CASE(test_dump_string_escapes_as_jansson_does),
    TESTING_CASE(test_dump_string_escapes_at_every_place),
    TESTING_CASE(test_dump_string_escapes_two_in_a_word),
    TESTING_CASE(test_load_takes_and_refuses_what_jansson_does),
    TESTING_CASE(test_utf8_is_rfc_3629),
    TESTING_CASE(test_utf8_tells_cut_from_invalid),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
