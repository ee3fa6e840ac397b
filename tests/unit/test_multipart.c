/* multipart: the boundary of a Content-Type, the parts of a form-data body
 * as E2B's SDK (undici's FormData) sends them, every byte value in a part,
 * and hostile bodies refused with a reason, never read past their end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/multipart.h"
#include "testing.h"

static void test_the_boundary_comes_from_the_content_type(void)
{
    char b[MULTIPART_MAX_BOUNDARY + 1];
    CHECK_INT(multipart_boundary("multipart/form-data; boundary=----formdata-undici-0123",
                                 b, sizeof b),
              0);
    CHECK_STR(b, "----formdata-undici-0123");
    CHECK_INT(multipart_boundary("Multipart/Form-Data;charset=utf-8; BOUNDARY=\"a b:c\"",
                                 b, sizeof b),
              0);
    CHECK_STR(b, "a b:c");
}

static void test_a_wrong_type_or_boundary_is_refused(void)
{
    char b[MULTIPART_MAX_BOUNDARY + 1];
    static const char *const bad[] = {
        "application/octet-stream",
        "multipart/form-data",
        "multipart/form-dataX; boundary=a",
        "multipart/mixed; boundary=a",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\"\"",
        "multipart/form-data; boundary=\"a \"",     /* ends with a space */
        "multipart/form-data; boundary=\"a\\\"b\"", /* a quote is no bchar */
        "multipart/form-data; boundary=a; boundary=b",
        "multipart/form-data; boundary=\"unterminated",
        "multipart/form-data; "
        "boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 71 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = multipart_boundary(bad[i], b, sizeof b);
        if (rc != -EINVAL)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK_INT(rc, -EINVAL);
    }
}

static void test_the_parts_of_a_form_as_undici_sends_it(void)
{
    static const char body[] =
        "------formdata-undici-1\r\n"
        "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
        "Content-Type: application/octet-stream\r\n"
        "\r\n"
        "line one\r\n--not the boundary\r\n"
        "\r\n------formdata-undici-1\r\n"
        "content-disposition: form-data; name=\"file\"; filename=\"b \\\"q\\\".bin\"\r\n"
        "\r\n"
        "\r\n------formdata-undici-1--\r\n";
    struct multipart m;
    struct multipart_part p;
    multipart_init(&m, "----formdata-undici-1", body, sizeof body - 1);
    REQUIRE(multipart_next(&m, &p) == 1);
    CHECK_STR(p.name, "file");
    CHECK(p.has_filename);
    CHECK_STR(p.filename, "/home/user/a.txt");
    CHECK_INT(p.len, strlen("line one\r\n--not the boundary\r\n"));
    CHECK(memcmp(p.data, "line one\r\n--not the boundary\r\n", p.len) == 0);
    REQUIRE(multipart_next(&m, &p) == 1);
    CHECK_STR(p.filename, "b \"q\".bin");
    CHECK_INT(p.len, 0);
    CHECK_INT(multipart_next(&m, &p), 0);
    CHECK_INT(multipart_next(&m, &p), 0);
}

static void test_every_byte_value_in_a_part_after_a_preamble(void)
{
    char body[1024];
    size_t n = (size_t)snprintf(body, sizeof body,
                                "preamble\r\n--XyZ\r\n"
                                "Content-Disposition: form-data; name=field\r\n\r\n");
    for (int i = 0; i < 256; i++)
        body[n++] = (char)i;
    n += (size_t)snprintf(body + n, sizeof body - n, "\r\n--XyZ--");
    struct multipart m;
    struct multipart_part p;
    multipart_init(&m, "XyZ", body, n);
    REQUIRE(multipart_next(&m, &p) == 1);
    CHECK_STR(p.name, "field");
    CHECK(!p.has_filename);
    REQUIRE(p.len == 256);
    for (int i = 0; i < 256; i++)
        CHECK((unsigned char)p.data[i] == i);
    CHECK_INT(multipart_next(&m, &p), 0);
}

/* The first rc multipart_next gives other than 1 on text (copied to the heap,
 * its exact size, so that a read past its end shows under ASan). */
static int walk(const char *text, const char **error)
{
    size_t len = strlen(text);
    char *body = malloc(len ? len : 1);
    REQUIRE(body);
    memcpy(body, text, len);
    struct multipart m;
    struct multipart_part p;
    multipart_init(&m, "b", body, len);
    int rc;
    while ((rc = multipart_next(&m, &p)) == 1)
        ;
    *error = m.error;
    free(body);
    return rc;
}

static void test_hostile_bodies_are_refused_with_a_reason(void)
{
    static const char *const bad[] = {
        "",
        "no boundary at all",
        "--b",
        "--bX\r\n",
        "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\ndata without end",
        "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n",
        "--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: attachment; name=\"f\"\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: form-data; name=\"f\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: form-data; name=\"f\"; name=\"g\"\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n"
        "Content-Disposition: form-data; name=\"g\"\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: form-data; name=\"a\001\"\r\n\r\nx\r\n--b--",
        "--b\r\nno colon here\r\n\r\nx\r\n--b--",
        "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n--b",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *error = NULL;
        int rc = walk(bad[i], &error);
        if (rc != -EINVAL)
            fprintf(stderr, "accepted: case %zu\n", i);
        CHECK_INT(rc, -EINVAL);
        CHECK(error != NULL);
    }
}

static void test_headers_and_parts_are_bounded(void)
{
    /* A header line longer than the bound. */
    size_t n = MULTIPART_MAX_HEADERS + 64;
    char *body = calloc(1, n + 64);
    REQUIRE(body);
    size_t o = (size_t)snprintf(body, 64, "--b\r\nX-Long: ");
    memset(body + o, 'a', n - o);
    memcpy(body + n, "\r\n\r\nx\r\n--b--", 12);
    struct multipart m;
    struct multipart_part p;
    multipart_init(&m, "b", body, n + 12);
    CHECK_INT(multipart_next(&m, &p), -EINVAL);
    CHECK_STR(m.error, "a part's headers are too long");
    free(body);

    /* More parts than the bound. */
    static const char part[] =
        "\r\nContent-Disposition: form-data; name=f\r\n\r\nx\r\n--b";
    size_t count = MULTIPART_MAX_PARTS + 2;
    body = malloc(4 + count * (sizeof part - 1) + 3);
    REQUIRE(body);
    o = 0;
    memcpy(body, "--b", 3);
    o = 3;
    for (size_t i = 0; i < count; i++) {
        memcpy(body + o, part, sizeof part - 1);
        o += sizeof part - 1;
    }
    memcpy(body + o, "--", 2);
    o += 2;
    multipart_init(&m, "b", body, o);
    int rc, parts = 0;
    while ((rc = multipart_next(&m, &p)) == 1)
        parts++;
    CHECK_INT(rc, -EINVAL);
    CHECK_INT(parts, MULTIPART_MAX_PARTS);
    free(body);
}

static void test_a_filename_longer_than_the_bound_is_refused(void)
{
    size_t n = MULTIPART_MAX_FILENAME + 1;
    char *body = calloc(1, n + 200);
    REQUIRE(body);
    size_t o = (size_t)snprintf(
        body, 200, "--b\r\nContent-Disposition: form-data; name=f; filename=\"");
    memset(body + o, 'a', n);
    o += n;
    o += (size_t)snprintf(body + o, 200, "\"\r\n\r\nx\r\n--b--");
    struct multipart m;
    struct multipart_part p;
    multipart_init(&m, "b", body, o);
    CHECK_INT(multipart_next(&m, &p), -EINVAL);
    free(body);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_the_boundary_comes_from_the_content_type),
    TESTING_CASE(test_a_wrong_type_or_boundary_is_refused),
    TESTING_CASE(test_the_parts_of_a_form_as_undici_sends_it),
    TESTING_CASE(test_every_byte_value_in_a_part_after_a_preamble),
    TESTING_CASE(test_hostile_bodies_are_refused_with_a_reason),
    TESTING_CASE(test_headers_and_parts_are_bounded),
    TESTING_CASE(test_a_filename_longer_than_the_bound_is_refused),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
