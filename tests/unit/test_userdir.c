/* Unit tests of userdir: the user names a workspace may be made of, the
 * {username} placeholder, the folder made 0700 beneath its parent and never
 * through a link, and the log's context. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/userdir.h"
#include "testing.h"

static char base[] = "/tmp/sandpit-test-gwuser-XXXXXX";

static void use_base(void)
{
    REQUIRE(mkdtemp(base) != NULL);
    testing_remove_after(base);
}

static void test_user_names(void)
{
    static const char *const good[] = {"alice", "a.b", "a_b-c", "A1", "x."};
    static const char *const bad[] = {"",    ".x",   "..",       "../x", "a/b",
                                      "a b", "a\nb", "\xc3\xa9", "a{b}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(userdir_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!userdir_valid(bad[i]));
    CHECK(!userdir_valid(NULL));
    char longest[USERDIR_MAX + 2];
    memset(longest, 'a', sizeof longest - 1);
    longest[USERDIR_MAX] = 0;
    CHECK(userdir_valid(longest));
    longest[USERDIR_MAX] = 'a';
    longest[USERDIR_MAX + 1] = 0;
    CHECK(!userdir_valid(longest));
}

static void test_the_placeholder_becomes_a_private_folder(void)
{
    use_base();
    char ws[256], want[256], err[512];
    snprintf(ws, sizeof ws, "%s/{username}/work", base);
    char *out = NULL;
    umask(022);
    CHECK_INT(userdir_workspace(ws, "alice", &out, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s/alice/work", base);
    CHECK_STR(out, want);
    free(out);
    struct stat st;
    snprintf(want, sizeof want, "%s/alice", base);
    REQUIRE(stat(want, &st) == 0);
    CHECK_INT(st.st_mode & 07777, 0700);
    CHECK_INT((int)st.st_uid, (int)geteuid());
    /* Again: the folder is there, and is used as it is. */
    CHECK_INT(userdir_workspace(ws, "alice", &out, err, sizeof err), 0);
    free(out);
    /* No placeholder: nothing is done. */
    CHECK_INT(userdir_workspace(base, "alice", &out, err, sizeof err), 0);
    CHECK(out == NULL);
    CHECK_INT(userdir_workspace(NULL, "alice", &out, err, sizeof err), 0);
}

static void test_what_is_refused(void)
{
    use_base();
    char ws[256], link[256], err[512];
    char *out = NULL;
    snprintf(ws, sizeof ws, "%s/{username}", base);
    CHECK_INT(userdir_workspace(ws, "../x", &out, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "KERNEL_USERNAME") && strstr(err, "cannot name a workspace"));
    CHECK_INT(userdir_workspace(ws, "a/b", &out, err, sizeof err), -EINVAL);
    CHECK_INT(userdir_workspace(ws, "a\nb", &out, err, sizeof err), -EINVAL);
    CHECK(!strchr(err, '\n'));
    CHECK_INT(userdir_workspace(ws, NULL, &out, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "KERNEL_USERNAME is not set"));
    snprintf(ws, sizeof ws, "%s/u{username}", base);
    CHECK_INT(userdir_workspace(ws, "alice", &out, err, sizeof err), -EINVAL);
    snprintf(ws, sizeof ws, "%s/{username}/{username}", base);
    CHECK_INT(userdir_workspace(ws, "alice", &out, err, sizeof err), -EINVAL);
    CHECK(out == NULL);
    /* A link where the user's folder should be is not followed. */
    snprintf(link, sizeof link, "%s/mallory", base);
    REQUIRE(symlink("/tmp", link) == 0);
    snprintf(ws, sizeof ws, "%s/{username}", base);
    CHECK(userdir_workspace(ws, "mallory", &out, err, sizeof err) < 0);
    CHECK(out == NULL);
    /* A parent that is not there. */
    snprintf(ws, sizeof ws, "%s/missing/{username}", base);
    CHECK_INT(userdir_workspace(ws, "alice", &out, err, sizeof err), -ENOENT);
    CHECK(strstr(err, "it must exist on this host"));
}

static void test_the_log_context(void)
{
    char buf[160];
    userdir_log_context("k-1", "alice", buf, sizeof buf);
    CHECK_STR(buf, "kernel_id=k-1 user=alice");
    userdir_log_context("k-1", "a] forged", buf, sizeof buf);
    CHECK_STR(buf, "kernel_id=k-1");
    userdir_log_context("k-1", NULL, buf, sizeof buf);
    CHECK_STR(buf, "kernel_id=k-1");
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_user_names),
    TESTING_CASE(test_the_placeholder_becomes_a_private_folder),
    TESTING_CASE(test_what_is_refused),
    TESTING_CASE(test_the_log_context),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
