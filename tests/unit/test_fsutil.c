/* Unit tests of fsutil's whole-file reader and writer, the one way the client
 * commands and install read and write a file by its path: a file is replaced
 * whole, a link at the path is replaced and never followed, and the reader
 * refuses a link and a FIFO rather than following or waiting on them. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "sandbox/tfile.h"
#include "testing.h"

static char base[] = "/tmp/sandpit-test-fsutil-XXXXXX";

static const char *in_base(const char *name)
{
    static char path[PATH_MAX];
    static bool made; /* each test runs in a process of its own: a folder each */
    if (!made) {
        REQUIRE(mkdtemp(base) != NULL);
        testing_remove_after(base);
        made = true;
    }
    snprintf(path, sizeof path, "%s/%s", base, name);
    return path;
}

static void test_a_file_is_written_whole_and_read_back(void)
{
    char *text = NULL;
    size_t len = 0;
    umask(022);
    const char *path = in_base("kernel.json");
    CHECK_INT(fsutil_write_file(path, "{}\n", 3, 0600), 0);
    CHECK_INT(fsutil_write_file(path, "{\"a\": 1}\n", 9, 0600), 0); /* replaced */
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK_INT(fsutil_read_file(path, 100, &text, &len), 0);
    CHECK_STR(text, "{\"a\": 1}\n");
    CHECK_INT(len, 9);
    free(text);
    CHECK_INT(fsutil_read_file(path, 8, &text, &len), -EFBIG);
    CHECK(text == NULL);
    /* a relative path is in the current folder */
    REQUIRE(chdir(base) == 0);
    CHECK_INT(fsutil_write_file("here.txt", "x", 1, 0644), 0);
    CHECK_INT(fsutil_read_file("here.txt", 10, &text, &len), 0);
    CHECK_STR(text, "x");
    free(text);
    CHECK_INT(fsutil_write_file("folder/", "x", 1, 0644), -EISDIR);
}

static void test_a_link_is_replaced_by_the_writer_and_refused_by_the_reader(void)
{
    char *text = NULL;
    size_t len = 0;
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s", in_base("target"));
    REQUIRE(fsutil_write_file(target, "kept", 4, 0600) == 0);
    const char *link = in_base("link");
    REQUIRE(symlink(target, link) == 0);
    CHECK_INT(fsutil_read_file(link, 100, &text, &len), -ELOOP);
    CHECK(text == NULL);
    CHECK_INT(fsutil_write_file(link, "new", 3, 0600), 0);
    struct stat st;
    REQUIRE(lstat(link, &st) == 0);
    CHECK(S_ISREG(st.st_mode)); /* the link itself was replaced */
    CHECK_INT(fsutil_read_file(target, 100, &text, &len), 0);
    CHECK_STR(text, "kept"); /* and what it pointed to is as it was */
    free(text);
}

static void test_a_fifo_is_refused_at_once(void)
{
    char *text = NULL;
    size_t len = 0;
    const char *fifo = in_base("fifo");
    REQUIRE(mkfifo(fifo, 0600) == 0);
    CHECK_INT(fsutil_read_file(fifo, 100, &text, &len), -TFILE_EKIND);
    CHECK(text == NULL);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_file_is_written_whole_and_read_back),
    TESTING_CASE(test_a_link_is_replaced_by_the_writer_and_refused_by_the_reader),
    TESTING_CASE(test_a_fifo_is_refused_at_once),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
