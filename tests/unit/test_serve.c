/* Unit tests of sandpit serve's pure parts: the WebSocket codec both ways in
 * both protocols (and its refusals of hostile offsets), the token and Origin
 * checks, the kernel model's date and ids. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/auth.h"
#include "kernel/serve/codec.h"
#include "kernel/serve/model.h"
#include "testing.h"

#define PRE 16

static struct msg *sample(size_t nbuffers)
{
    struct msg *m = calloc(1, sizeof *m);
    REQUIRE(m != NULL);
    m->header = json_pack("{s:s, s:s, s:s}", "msg_id", "id-1", "msg_type", "comm_msg",
                          "session", "s");
    m->parent_header = json_pack("{s:s}", "msg_id", "parent-1");
    m->metadata = json_object();
    m->content = json_pack("{s:s, s:i}", "text", "h\u00e9llo \"quoted\"", "n", 7);
    for (size_t i = 0; i < nbuffers; i++) {
        unsigned char b[300];
        for (size_t j = 0; j < sizeof b; j++)
            b[j] = (unsigned char)(i * 31 + j);
        REQUIRE(msg_add_buffer(m, b, 10 + i * 100) == 0);
    }
    return m;
}

static void check_same(const struct msg *a, const struct msg *b)
{
    CHECK(json_equal(a->header, b->header));
    CHECK(json_equal(a->parent_header, b->parent_header));
    CHECK(json_equal(a->metadata, b->metadata));
    CHECK(json_equal(a->content, b->content));
    REQUIRE(a->nbuffers == b->nbuffers);
    for (size_t i = 0; i < a->nbuffers; i++) {
        CHECK_INT(a->buffers[i].len, b->buffers[i].len);
        CHECK(memcmp(a->buffers[i].data, b->buffers[i].data, a->buffers[i].len) == 0);
    }
}

static void roundtrip(enum codec_proto p, size_t nbuffers, bool want_binary)
{
    struct msg *m = sample(nbuffers), *back = NULL;
    unsigned char *out;
    size_t len;
    bool binary;
    REQUIRE(codec_encode(m, "shell", p, PRE, &out, &len, &binary) == 0);
    CHECK(binary == want_binary);
    enum connection_channel ch = CONNECTION_HB;
    char err[256];
    CHECK_INT(codec_decode(out + PRE, len, binary, p, &ch, &back, err, sizeof err), 0);
    REQUIRE(back != NULL);
    CHECK_INT(ch, CONNECTION_SHELL);
    check_same(m, back);
    free(out);
    msg_free(m);
    msg_free(back);
}

static void test_codec_roundtrips(void)
{
    roundtrip(CODEC_LEGACY, 0, false);
    roundtrip(CODEC_LEGACY, 1, true);
    roundtrip(CODEC_LEGACY, 3, true);
    roundtrip(CODEC_V1, 0, true);
    roundtrip(CODEC_V1, 2, true);
}

static void test_legacy_json_has_the_fields_jupyter_server_writes(void)
{
    struct msg *m = sample(0);
    unsigned char *out;
    size_t len;
    bool binary;
    REQUIRE(codec_encode(m, "iopub", CODEC_LEGACY, PRE, &out, &len, &binary) == 0);
    json_error_t e;
    json_t *v = json_loadb((const char *)out + PRE, len, 0, &e);
    REQUIRE(v != NULL);
    CHECK_STR(json_string_value(json_object_get(v, "channel")), "iopub");
    CHECK_STR(json_string_value(json_object_get(v, "msg_type")), "comm_msg");
    CHECK_STR(json_string_value(json_object_get(v, "msg_id")), "id-1");
    CHECK(json_is_array(json_object_get(v, "buffers")));
    json_decref(v);
    free(out);
    msg_free(m);
}

static void test_v1_layout(void)
{
    struct msg *m = sample(1);
    unsigned char *out;
    size_t len;
    bool binary;
    REQUIRE(codec_encode(m, "iopub", CODEC_V1, PRE, &out, &len, &binary) == 0);
    const unsigned char *p = out + PRE;
    uint64_t n = 0, first = 0, chan_end = 0, last = 0;
    for (int i = 7; i >= 0; i--) {
        n = n << 8 | p[i];
        first = first << 8 | p[8 + i];
        chan_end = chan_end << 8 | p[16 + i];
    }
    CHECK_INT(n, 7); /* channel start, its end, four parts, one buffer */
    CHECK_INT(first, 8 * (1 + 7));
    CHECK_INT(chan_end - first, 5);
    CHECK(memcmp(p + first, "iopub", 5) == 0);
    for (int i = 7; i >= 0; i--)
        last = last << 8 | p[8 * 7 + i];
    CHECK_INT(last, len);
    free(out);
    msg_free(m);
}

static int decode(const void *data, size_t len, bool binary, enum codec_proto p)
{
    struct msg *m = NULL;
    enum connection_channel ch;
    char err[256];
    int rc = codec_decode(data, len, binary, p, &ch, &m, err, sizeof err);
    CHECK((rc == 0) == (m != NULL));
    msg_free(m);
    return rc;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void test_hostile_input_is_refused(void)
{
    const char *bad_json[] = {
        "",
        "[]",
        "{",
        "{\"channel\":\"shell\"}",
        "{\"channel\":\"hb\",\"header\":{}}",
        "{\"channel\":\"shell\",\"header\":{\"msg_id\":1,\"msg_type\":\"x\"}}",
        "{\"channel\":\"shell\",\"header\":{\"msg_id\":\"a\",\"msg_type\":\"x\"},"
        "\"content\":[]}",
        "{\"channel\":\"shell\",\"channel\":\"stdin\",\"header\":{\"msg_id\":\"a\","
        "\"msg_type\":\"x\"}}",
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++)
        CHECK_INT(decode(bad_json[i], strlen(bad_json[i]), false, CODEC_LEGACY),
                  -EBADMSG);
    const char *good = "{\"channel\":\"control\",\"header\":{\"msg_id\":\"a\","
                       "\"msg_type\":\"x\"}}";
    CHECK_INT(decode(good, strlen(good), false, CODEC_LEGACY), 0);
    CHECK_INT(decode(good, strlen(good), false, CODEC_V1), -EBADMSG); /* text in v1 */
    unsigned char b[128];
    memset(b, 0, sizeof b);
    b[3] = 200; /* legacy binary: 200 parts */
    CHECK_INT(decode(b, sizeof b, true, CODEC_LEGACY), -EBADMSG);
    b[3] = 2; /* offsets 0 and 0: inside the table */
    CHECK_INT(decode(b, 12, true, CODEC_LEGACY), -EBADMSG);
    b[7] = 12;
    b[11] = 5; /* goes back */
    CHECK_INT(decode(b, 20, true, CODEC_LEGACY), -EBADMSG);
    CHECK_INT(decode(b, 3, true, CODEC_LEGACY), -EBADMSG);
    memset(b, 0, sizeof b);
    put64(b, 6);
    uint64_t offs[6] = {56, 61, 61, 61, 61, (uint64_t)1 << 62};
    for (int i = 0; i < 6; i++)
        put64(b + 8 * (i + 1), offs[i]);
    memcpy(b + 56, "shell", 5);
    CHECK_INT(decode(b, 61, true, CODEC_V1), -EBADMSG); /* past the end */
    put64(b, (uint64_t)1 << 40);
    CHECK_INT(decode(b, 61, true, CODEC_V1), -EBADMSG); /* a huge count */
    CHECK_INT(decode(b, 7, true, CODEC_V1), -EBADMSG);
    /* Four good parts, then a buffer said to end far past the frame. */
    static const char hdr[] = "{\"msg_id\":\"a\",\"msg_type\":\"x\"}";
    size_t hl = sizeof hdr - 1, at = 8 * 8;
    unsigned char f[256];
    memset(f, 0, sizeof f);
    put64(f, 7);
    uint64_t o[7] = {at,          at + 5,      at + 5 + hl,      at + 5 + hl,
                     at + 5 + hl, at + 5 + hl, (uint64_t)1 << 62};
    for (int i = 0; i < 7; i++)
        put64(f + 8 * (i + 1), o[i]);
    memcpy(f + at, "shell", 5);
    memcpy(f + at + 5, hdr, hl);
    size_t flen = at + 5 + hl + 4;
    CHECK_INT(decode(f, flen, true, CODEC_V1), -EBADMSG);
    o[6] = flen; /* the same, within the frame: a buffer of 4 bytes */
    put64(f + 8 * 7, o[6]);
    CHECK_INT(decode(f, flen, true, CODEC_V1), 0);
}

static void test_the_token(void)
{
    const char *t = "s3cret";
    CHECK(auth_request_ok(t, "token s3cret", NULL));
    CHECK(auth_request_ok(t, "Token  s3cret ", NULL));
    CHECK(auth_request_ok(t, "Bearer s3cret", NULL));
    CHECK(auth_request_ok(t, "bearer s3cret", NULL));
    CHECK(auth_request_ok(t, NULL, "s3cret"));
    CHECK(auth_request_ok(t, "token wrong", "s3cret"));
    CHECK(!auth_request_ok(t, "token s3cre", NULL));
    CHECK(!auth_request_ok(t, "token s3crett", NULL));
    CHECK(!auth_request_ok(t, "Basic s3cret", NULL));
    CHECK(!auth_request_ok(t, "s3cret", NULL));
    CHECK(!auth_request_ok(t, NULL, NULL));
    CHECK(!auth_request_ok(t, NULL, ""));
    CHECK(!auth_request_ok("", "token ", ""));
    CHECK(!auth_request_ok(NULL, "token x", "x"));
    char gen[AUTH_TOKEN_HEX + 1], gen2[AUTH_TOKEN_HEX + 1];
    REQUIRE(auth_token_generate(gen, sizeof gen) == 0);
    REQUIRE(auth_token_generate(gen2, sizeof gen2) == 0);
    CHECK_INT(strlen(gen), AUTH_TOKEN_HEX);
    CHECK(strcmp(gen, gen2) != 0);
    CHECK(auth_token_valid(gen));
    CHECK(!auth_token_valid(""));
    CHECK(!auth_token_valid("a b"));
    CHECK(!auth_token_valid("a\nb"));
}

static void test_the_origin(void)
{
    CHECK(auth_origin_ok(NULL, "h:1", NULL));
    CHECK(auth_origin_ok("http://h:1", "h:1", NULL));
    CHECK(auth_origin_ok("https://H:1", "h:1", NULL));
    CHECK(!auth_origin_ok("http://h:2", "h:1", NULL));
    CHECK(!auth_origin_ok("http://evil", "h:1", NULL));
    CHECK(!auth_origin_ok("null", "h:1", NULL));
    CHECK(!auth_origin_ok("file://h:1", "h:1", NULL));
    CHECK(!auth_origin_ok("http://h:1", NULL, NULL));
    CHECK(auth_origin_ok("http://app.example", "h:1", "http://app.example"));
    CHECK(!auth_origin_ok("http://app.example.evil", "h:1", "http://app.example"));
    CHECK(auth_origin_ok("http://any", "h:1", "*"));
}

static void test_the_e2b_prefix(void)
{
    const char *sec = "0123456789abcdef", *rest = NULL;
    CHECK_INT(auth_e2b_path(sec, "/api/kernels", &rest), 0);
    CHECK_INT(auth_e2b_path(sec, "/e2bx/0123456789abcdef/execute", &rest), 0);
    CHECK_INT(auth_e2b_path(sec, "/e2b/0123456789abcdef/execute", &rest), 1);
    CHECK_STR(rest, "/execute");
    CHECK_INT(auth_e2b_path(sec, "/e2b/0123456789abcdef", &rest), 1);
    CHECK_STR(rest, "");
    CHECK_INT(auth_e2b_path(sec, "/e2b/0123456789abcdeg/execute", &rest), -1);
    CHECK_INT(auth_e2b_path(sec, "/e2b/0123456789abcde/execute", &rest), -1);
    CHECK_INT(auth_e2b_path(sec, "/e2b/0123456789abcdef0/execute", &rest), -1);
    CHECK_INT(auth_e2b_path(sec, "/e2b/", &rest), -1);
    CHECK_INT(auth_e2b_path(sec, "/e2b", &rest), -1);
    CHECK_INT(auth_e2b_path(sec, "/e2b//execute", &rest), -1);
    CHECK_INT(auth_e2b_path("", "/e2b//execute", &rest), -1);
    CHECK_INT(auth_e2b_path(NULL, "/e2b/x/execute", &rest), -1);
    CHECK(auth_secret_valid(sec));
    CHECK(auth_secret_valid("AZaz09-._~AZaz09"));
    CHECK(!auth_secret_valid("short"));
    CHECK(!auth_secret_valid("0123456789abcde/"));
    CHECK(!auth_secret_valid("0123456789abcde%"));
    CHECK(!auth_secret_valid(NULL));
}

static void test_the_model(void)
{
    char d[MODEL_DATE_LEN];
    model_date(1704164645.000006, d, sizeof d);
    CHECK_STR(d, "2024-01-02T03:04:05.000006Z");
    model_date(0.5, d, sizeof d);
    CHECK_STR(d, "1970-01-01T00:00:00.500000Z");
    char id[MODEL_ID_LEN + 1];
    REQUIRE(model_id_new(id) == 0);
    CHECK(model_id_valid(id));
    CHECK_INT(id[14], '4');
    CHECK(!model_id_valid("../../etc/passwd"));
    CHECK(!model_id_valid("309F767C-6973-46B5-B7FD-D0355A4CEEC0"));
    CHECK(!model_id_valid("309f767c-6973-46b5-b7fd-d0355a4ceec"));
    struct model_kernel k = {.id = id,
                             .name = "sandpit",
                             .state = "idle",
                             .last_activity = 1704164645.25,
                             .connections = 2};
    json_t *j = model_kernel_json(&k);
    CHECK_STR(json_string_value(json_object_get(j, "last_activity")),
              "2024-01-02T03:04:05.250000Z");
    CHECK_INT(json_integer_value(json_object_get(j, "connections")), 2);
    json_decref(j);
    j = model_error(404, "gone");
    CHECK_STR(json_string_value(json_object_get(j, "reason")), "Not Found");
    json_decref(j);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_codec_roundtrips),
    TESTING_CASE(test_legacy_json_has_the_fields_jupyter_server_writes),
    TESTING_CASE(test_v1_layout),
    TESTING_CASE(test_hostile_input_is_refused),
    TESTING_CASE(test_the_token),
    TESTING_CASE(test_the_origin),
    TESTING_CASE(test_the_e2b_prefix),
    TESTING_CASE(test_the_model),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
