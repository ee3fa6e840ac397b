/* e2b_path: E2B's paths mapped beneath the workspace: /home/user and ~
 * prefixes, relative paths, and what is refused before any file is
 * touched (absolute paths elsewhere, "..", NUL, empty, overlong). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/e2b_path.h"
#include "testing.h"

static int map(const char *in, char *rel, const char **why)
{
    return e2b_path_map(in, strlen(in), rel, E2B_PATH_MAX + 1, why);
}

static void test_paths_under_the_home_and_relative_ones_map_alike(void)
{
    static const char *const cases[][2] = {
        {"/home/user/a.txt", "a.txt"},
        {"/home/user", ""},
        {"/home/user/", ""},
        {"a.txt", "a.txt"},
        {"./a/./b//c.txt", "a/b/c.txt"},
        {"~/x/y", "x/y"},
        {"~", ""},
        {".", ""},
        {"/home/user//deep/er/", "deep/er"},
        {"/home/userx", NULL},
        {"/home/user..", NULL},
        {"~x", "~x"},
        {"a..b/..c", "a..b/..c"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[E2B_PATH_MAX + 1] = "unset";
        const char *why = NULL;
        int rc = map(cases[i][0], rel, &why);
        if (cases[i][1]) {
            CHECK_INT(rc, 0);
            CHECK_STR(rel, cases[i][1]);
            CHECK(why == NULL);
        } else {
            CHECK_INT(rc, -EINVAL);
            CHECK(why != NULL);
        }
    }
}

static void test_what_cannot_be_mapped_is_refused_with_a_reason(void)
{
    static const char *const bad[] = {
        "",       "/etc/passwd",   "/",      "/home", "/home/other/x", "..", "../x",
        "a/../b", "/home/user/..", "~/../x", "a/..",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[E2B_PATH_MAX + 1];
        const char *why = NULL;
        int rc = map(bad[i], rel, &why);
        if (rc != -EINVAL)
            fprintf(stderr, "accepted: \"%s\" as \"%s\"\n", bad[i], rel);
        CHECK_INT(rc, -EINVAL);
        CHECK(why != NULL);
    }
}

static void test_a_nul_byte_is_refused(void)
{
    char rel[E2B_PATH_MAX + 1];
    const char *why;
    CHECK_INT(e2b_path_map("a\0b", 3, rel, sizeof rel, &why), -EINVAL);
    CHECK_STR(why, "the path holds a NUL byte");
}

static void test_overlong_paths_and_components_are_refused(void)
{
    char *in = calloc(1, E2B_PATH_MAX + 2), rel[E2B_PATH_MAX + 1];
    REQUIRE(in);
    const char *why;
    memset(in, 'a', E2B_PATH_MAX + 1);
    for (size_t i = 100; i < E2B_PATH_MAX; i += 100)
        in[i] = '/';
    CHECK_INT(e2b_path_map(in, E2B_PATH_MAX + 1, rel, sizeof rel, &why), -EINVAL);
    CHECK_INT(e2b_path_map(in, E2B_PATH_MAX, rel, sizeof rel, &why), 0);
    memset(in, 'b', NAME_MAX + 1);
    CHECK_INT(e2b_path_map(in, NAME_MAX + 1, rel, sizeof rel, &why), -EINVAL);
    CHECK_STR(why, "a component of the path is too long");
    CHECK_INT(e2b_path_map(in, NAME_MAX, rel, sizeof rel, &why), 0);
    /* A mapped path that does not fit the caller's room. */
    CHECK_INT(e2b_path_map("abcdef", 6, rel, 4, &why), -EINVAL);
    free(in);
}

static void test_the_client_sees_its_paths_under_the_home(void)
{
    char out[64];
    CHECK_INT(e2b_path_client("a/b.txt", out, sizeof out), 0);
    CHECK_STR(out, "/home/user/a/b.txt");
    CHECK_INT(e2b_path_client("", out, sizeof out), 0);
    CHECK_STR(out, "/home/user");
    CHECK_INT(e2b_path_client("a/b.txt", out, 8), -ENAMETOOLONG);
    CHECK_STR(e2b_path_name("a/b.txt"), "b.txt");
    CHECK_STR(e2b_path_name("c"), "c");
    CHECK_STR(e2b_path_name(""), "");
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_paths_under_the_home_and_relative_ones_map_alike),
    TESTING_CASE(test_what_cannot_be_mapped_is_refused_with_a_reason),
    TESTING_CASE(test_a_nul_byte_is_refused),
    TESTING_CASE(test_overlong_paths_and_components_are_refused),
    TESTING_CASE(test_the_client_sees_its_paths_under_the_home),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
