/* chunked: a chunked request body decoded whole, in pieces of every size,
 * and what hostile framing cannot make of it (overlong sizes, bare LFs,
 * endless lines and trailers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/chunked.h"
#include "testing.h"

/* Decodes text in pieces of step bytes (0: at once); the data into out
 * (NUL-terminated). The last rc; *done whether the end came. */
static int decode(const char *text, size_t len, size_t step, char *out, size_t *out_len,
                  int *done)
{
    struct chunked c;
    chunked_init(&c);
    char piece[4096];
    size_t o = 0;
    int rc = 0;
    for (size_t i = 0; i < len && !rc && !chunked_done(&c);) {
        size_t n = step && len - i > step ? step : len - i, got, used;
        memcpy(piece, text + i, n);
        rc = chunked_decode(&c, piece, n, piece, &got, &used);
        memcpy(out + o, piece, got);
        o += got;
        i += used;
        if (!rc && !chunked_done(&c))
            CHECK(used == n);
    }
    out[o] = 0;
    *out_len = o;
    *done = chunked_done(&c);
    return rc;
}

static void test_a_body_in_chunks_decodes_whole_and_in_every_piece_size(void)
{
    static const char body[] = "5\r\nhello\r\n1;ext=1\r\n \r\n"
                               "A\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n";
    for (size_t step = 0; step <= 8; step++) {
        char out[64];
        size_t len;
        int done;
        CHECK_INT(decode(body, sizeof body - 1, step, out, &len, &done), 0);
        CHECK(done);
        CHECK_STR(out, "hello 0123456789");
        CHECK_INT(len, 16);
    }
}

static void test_upper_case_hex_and_leading_zeros_are_sizes(void)
{
    static const char body[] = "000B\r\nabcdefghijk\r\n0000\r\n\r\n";
    char out[32];
    size_t len;
    int done;
    CHECK_INT(decode(body, sizeof body - 1, 1, out, &len, &done), 0);
    CHECK(done);
    CHECK_STR(out, "abcdefghijk");
}

static void test_every_byte_value_passes_through_the_data(void)
{
    char body[600], out[600];
    size_t n = (size_t)snprintf(body, sizeof body, "100\r\n");
    for (int i = 0; i < 256; i++)
        body[n++] = (char)i;
    memcpy(body + n, "\r\n0\r\n\r\n", 7);
    n += 7;
    size_t len;
    int done;
    CHECK_INT(decode(body, n, 7, out, &len, &done), 0);
    CHECK(done);
    REQUIRE(len == 256);
    for (int i = 0; i < 256; i++)
        CHECK((unsigned char)out[i] == i);
}

static void test_what_follows_the_end_is_not_consumed(void)
{
    static const char body[] = "2\r\nok\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    struct chunked c;
    chunked_init(&c);
    char out[64];
    size_t got, used;
    CHECK_INT(chunked_decode(&c, body, sizeof body - 1, out, &got, &used), 0);
    CHECK(chunked_done(&c));
    CHECK_INT(got, 2);
    CHECK_INT(used, strlen("2\r\nok\r\n0\r\n\r\n"));
}

static void test_hostile_framing_is_refused_with_a_reason(void)
{
    static const char *const bad[] = {
        "\r\n",                   /* no size */
        "x\r\n",                  /* not hex */
        " 5\r\nhello\r\n",        /* space before the size */
        "5\nhello\r\n",           /* bare LF after the size */
        "5\r\nhelloXY",           /* no CRLF after the data */
        "5\r\nhello\r\n0\r\n\n",  /* bare LF at the end */
        "11111111111111111\r\n",  /* 17 digits */
        "5;a\001b\r\nhello\r\n",  /* a control character in an extension */
        "0\r\nX-T: a\nb\r\n\r\n", /* a bare LF in a trailer */
        "5\r\nhello\r\n-1\r\n",   /* a negative size */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[64];
        size_t len;
        int done;
        int rc = decode(bad[i], strlen(bad[i]), 0, out, &len, &done);
        if (rc != -EINVAL)
            fprintf(stderr, "accepted: case %zu\n", i);
        CHECK_INT(rc, -EINVAL);
        CHECK(!done);
    }
}

static void test_a_refused_decoder_stays_refused(void)
{
    struct chunked c;
    chunked_init(&c);
    char out[16];
    size_t got, used;
    CHECK_INT(chunked_decode(&c, "zz", 2, out, &got, &used), -EINVAL);
    CHECK(c.error != NULL);
    CHECK_INT(chunked_decode(&c, "0\r\n\r\n", 5, out, &got, &used), -EINVAL);
    CHECK(!chunked_done(&c));
}

static void test_endless_size_lines_and_trailers_are_bounded(void)
{
    size_t n = CHUNKED_MAX_LINE + 16;
    char *body = malloc(n), *out = malloc(n);
    REQUIRE(body && out);
    memset(body, 'a', n);
    memcpy(body, "5;", 2); /* an extension that never ends */
    size_t got, used;
    struct chunked c;
    chunked_init(&c);
    CHECK_INT(chunked_decode(&c, body, n, out, &got, &used), -EINVAL);
    free(body);
    free(out);

    n = CHUNKED_MAX_TRAILERS + 64;
    body = malloc(n);
    out = malloc(n);
    REQUIRE(body && out);
    memset(body, 'a', n);
    memcpy(body, "0\r\n", 3); /* a trailer line that never ends */
    chunked_init(&c);
    CHECK_INT(chunked_decode(&c, body, n, out, &got, &used), -EINVAL);
    free(body);
    free(out);
}

static void test_a_huge_announced_chunk_is_only_what_came(void)
{
    struct chunked c;
    chunked_init(&c);
    static const char body[] = "ffffffffffffffff\r\nabc";
    char out[32];
    size_t got, used;
    CHECK_INT(chunked_decode(&c, body, sizeof body - 1, out, &got, &used), 0);
    CHECK_INT(got, 3);
    CHECK(!chunked_done(&c));
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_body_in_chunks_decodes_whole_and_in_every_piece_size),
    TESTING_CASE(test_upper_case_hex_and_leading_zeros_are_sizes),
    TESTING_CASE(test_every_byte_value_passes_through_the_data),
    TESTING_CASE(test_what_follows_the_end_is_not_consumed),
    TESTING_CASE(test_hostile_framing_is_refused_with_a_reason),
    TESTING_CASE(test_a_refused_decoder_stays_refused),
    TESTING_CASE(test_endless_size_lines_and_trailers_are_bounded),
    TESTING_CASE(test_a_huge_announced_chunk_is_only_what_came),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
