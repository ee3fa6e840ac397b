/* Unit tests for tfile: no open, creation or removal beneath a folder follows a
 * link (at the leaf or on the way), leaves the folder by `..` or an absolute
 * path, blocks on a FIFO or keeps a device; and a tree that a concurrent
 * process keeps swapping with a link (RENAME_EXCHANGE) is removed without
 * touching anything outside it. Each case runs twice where the resolution
 * matters: with openat2, and with the component-by-component walk that stands
 * in for it on kernels without. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/tfile.h"
#include "testing.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif

/* A fresh folder with: f (a file holding "inside"), d/ (a folder), and, beside
 * it, out/secret (a file holding "outside") that nothing may touch. */
struct tree {
    char root[64];
    char path[128];
    int fd; /* root/in */
};

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

static char *at(struct tree *t, const char *rel)
{
    snprintf(t->path, sizeof t->path, "%s/%s", t->root, rel);
    return t->path;
}

static void tree_init(struct tree *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/sandpit-tfile-test-XXXXXX");
    REQUIRE(mkdtemp(t->root) != NULL);
    testing_remove_after(t->root);
    REQUIRE(mkdir(at(t, "in"), 0700) == 0);
    REQUIRE(mkdir(at(t, "in/d"), 0700) == 0);
    REQUIRE(mkdir(at(t, "out"), 0700) == 0);
    put(at(t, "in/f"), "inside");
    put(at(t, "in/d/g"), "deeper");
    put(at(t, "out/secret"), "outside");
    t->fd = tfile_open_root(at(t, "in"));
    REQUIRE(t->fd >= 0);
}

static bool secret_intact(struct tree *t)
{
    char buf[32] = "";
    FILE *f = fopen(at(t, "out/secret"), "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, "outside") == 0;
}

static void check_opens(void)
{
    struct tree t;
    tree_init(&t);
    REQUIRE(symlink("../out/secret", at(&t, "in/leaf")) == 0);
    REQUIRE(symlink("../out", at(&t, "in/mid")) == 0);
    REQUIRE(symlink("/proc/self/root", at(&t, "in/magic")) == 0);
    REQUIRE(mkfifo(at(&t, "in/fifo"), 0600) == 0);

    int fd = tfile_open(t.fd, "f", O_RDONLY);
    CHECK(fd >= 0);
    close(fd);
    fd = tfile_open(t.fd, "./d//g", O_RDONLY);
    CHECK(fd >= 0);
    close(fd);
    CHECK_INT(tfile_open(t.fd, "leaf", O_RDONLY), -ELOOP);
    CHECK_INT(tfile_open(t.fd, "leaf", O_WRONLY | O_TRUNC), -ELOOP);
    CHECK_INT(tfile_open(t.fd, "mid/secret", O_RDONLY), -ELOOP);
    CHECK_INT(tfile_open(t.fd, "magic/etc/passwd", O_RDONLY), -ELOOP);
    CHECK_INT(tfile_open(t.fd, "../out/secret", O_RDONLY), -EXDEV);
    CHECK_INT(tfile_open(t.fd, "d/../../out/secret", O_RDONLY), -EXDEV);
    CHECK_INT(tfile_open(t.fd, "/etc/passwd", O_RDONLY), -EXDEV);
    CHECK_INT(tfile_open(t.fd, "d", O_RDONLY), -EISDIR);
    CHECK_INT(tfile_open(t.fd, "d", O_WRONLY), -EISDIR);
    CHECK_INT(tfile_open(t.fd, "f/x", O_RDONLY), -ENOTDIR);
    CHECK_INT(tfile_open(t.fd, "f", O_RDONLY | O_CREAT), -EINVAL);
    /* A FIFO with no writer, and one with no reader: refused at once, not waited on
     * (the runner's timeout fails the test if either blocks). */
    CHECK_INT(tfile_open(t.fd, "fifo", O_RDONLY), -TFILE_EKIND);
    CHECK_INT(tfile_open(t.fd, "fifo", O_WRONLY), -TFILE_EKIND);
    CHECK_INT(tfile_open(t.fd, "missing", O_RDONLY), -ENOENT);

    fd = tfile_open_dir(t.fd, "d");
    CHECK(fd >= 0);
    close(fd);
    CHECK_INT(tfile_open_dir(t.fd, "mid"), -ELOOP);
    CHECK_INT(tfile_open_dir(t.fd, "f"), -ENOTDIR);
    CHECK_INT(tfile_open_dir(t.fd, "fifo"), -ENOTDIR); /* refused before it opens */
    CHECK_INT(tfile_open_dir(t.fd, ".."), -EXDEV);

    char *text = NULL;
    size_t len = 0;
    CHECK_INT(tfile_read(t.fd, "f", 100, &text, &len), 0);
    CHECK_STR(text, "inside");
    CHECK_INT(len, 6);
    free(text);
    CHECK_INT(tfile_read(t.fd, "f", 5, &text, &len), -EFBIG);
    CHECK(text == NULL);
    CHECK_INT(tfile_read(t.fd, "leaf", 100, &text, &len), -ELOOP);
    CHECK(secret_intact(&t));
    close(t.fd);
}

static void test_opens_never_follow_a_link_or_leave_the_folder(void)
{
    check_opens();
}

static void test_the_walk_without_openat2_refuses_the_same(void)
{
    tfile_force_walk(true);
    check_opens();
}

/* A character device: /dev/null, beneath /dev (the worker cannot make one, but a
 * file of that kind must be refused wherever it comes from). */
static void test_a_device_is_not_a_file(void)
{
    int dev = tfile_open_root("/dev");
    REQUIRE(dev >= 0);
    CHECK_INT(tfile_open(dev, "null", O_RDONLY), -TFILE_EKIND);
    tfile_force_walk(true);
    CHECK_INT(tfile_open(dev, "null", O_WRONLY), -TFILE_EKIND);
    close(dev);
}

static void check_writes(void)
{
    struct tree t;
    tree_init(&t);
    REQUIRE(symlink("../out/secret", at(&t, "in/planted")) == 0);
    REQUIRE(symlink("../out", at(&t, "in/mid")) == 0);

    /* A link at the final name: refused without TFILE_REPLACE, replaced (the link
     * itself, not its target) with it. */
    CHECK_INT(tfile_write(t.fd, "planted", "evil", 4, 0644, 0), -EEXIST);
    CHECK(secret_intact(&t));
    CHECK_INT(tfile_write(t.fd, "planted", "new", 3, 0644, TFILE_REPLACE), 0);
    CHECK(secret_intact(&t));
    struct stat st;
    CHECK(lstat(at(&t, "in/planted"), &st) == 0 && S_ISREG(st.st_mode));
    CHECK_INT(tfile_write(t.fd, "mid/secret", "evil", 4, 0644, TFILE_REPLACE), -ELOOP);
    CHECK_INT(tfile_write(t.fd, "../out/secret", "evil", 4, 0644, TFILE_REPLACE), -EXDEV);
    CHECK(secret_intact(&t));
    CHECK_INT(tfile_write(t.fd, "d/new", "x", 1, 0600, 0), 0);
    CHECK(lstat(at(&t, "in/d/new"), &st) == 0 && S_ISREG(st.st_mode) &&
          (st.st_mode & 0777) == 0600);

    /* The temporary name is fresh: a link planted at any guessable name is never
     * opened, and a taken final name leaves t for another. */
    struct tfile_new n;
    REQUIRE(tfile_create(t.fd, "", 0644, &n) == 0);
    CHECK(strncmp(n.name, ".sandpit-", 9) == 0);
    CHECK(write(n.fd, "abc", 3) == 3);
    CHECK_INT(tfile_commit(&n, "f", 0), -EEXIST);
    CHECK(n.fd >= 0);
    CHECK_INT(tfile_commit(&n, "f2", 0), 0);
    CHECK(n.fd == -1 && n.dirfd == -1);
    char *text = NULL;
    size_t len;
    CHECK_INT(tfile_read(t.fd, "f2", 10, &text, &len), 0);
    CHECK_STR(text, "abc");
    free(text);
    REQUIRE(tfile_create(t.fd, "d", 0644, &n) == 0);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "in/d/%s", n.name);
    CHECK(lstat(at(&t, tmp), &st) == 0);
    tfile_abort(&n);
    CHECK(lstat(at(&t, tmp), &st) < 0 && errno == ENOENT);
    CHECK_INT(tfile_create(t.fd, "mid", 0644, &n), -ELOOP);

    /* mkdir -p beneath: made, opened; a link on the way is refused, not followed. */
    int fd = tfile_mkdir(t.fd, "a/b/c", 0755);
    CHECK(fd >= 0);
    close(fd);
    CHECK(lstat(at(&t, "in/a/b/c"), &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_INT(tfile_mkdir(t.fd, "mid/x", 0755), -ELOOP);
    CHECK(lstat(at(&t, "out/x"), &st) < 0);
    CHECK_INT(tfile_mkdir(t.fd, "f/x", 0755), -ENOTDIR);
    close(t.fd);
}

static void test_writes_make_a_fresh_file_and_move_it_into_place(void)
{
    check_writes();
}

static void test_writes_by_the_walk(void)
{
    tfile_force_walk(true);
    check_writes();
}

/* A stale-looking tree holding a link to the outside folder, a link in place of
 * a folder, and a tree deeper than the bound. */
static void test_a_tree_is_removed_without_following_its_links(void)
{
    struct tree t;
    tree_init(&t);
    REQUIRE(symlink("../../out", at(&t, "in/d/to-out")) == 0);
    REQUIRE(symlink("../out/secret", at(&t, "in/d/to-secret")) == 0);
    REQUIRE(mkfifo(at(&t, "in/d/fifo"), 0600) == 0);
    REQUIRE(symlink("../out", at(&t, "in/is-a-link")) == 0);
    CHECK_INT(tfile_remove_tree(t.fd, "d"), 0);
    CHECK_INT(tfile_remove_tree(t.fd, "is-a-link"), 0);
    struct stat st;
    CHECK(lstat(at(&t, "in/d"), &st) < 0 && errno == ENOENT);
    CHECK(lstat(at(&t, "in/is-a-link"), &st) < 0 && errno == ENOENT);
    CHECK(secret_intact(&t));
    CHECK_INT(tfile_remove_tree(t.fd, "missing"), -ENOENT);
    CHECK_INT(tfile_remove_tree(t.fd, ".."), -EINVAL);
    CHECK_INT(tfile_remove_tree(t.fd, "a/b"), -EINVAL);

    char rel[1024] = "in/deep";
    REQUIRE(mkdir(at(&t, rel), 0700) == 0);
    for (int i = 0; i < TFILE_MAX_DEPTH + 4; i++) {
        strcat(rel, "/x");
        REQUIRE(mkdir(at(&t, rel), 0700) == 0);
    }
    CHECK(tfile_remove_tree(t.fd, "deep") < 0); /* past the bound: stays */
    CHECK(lstat(at(&t, rel), &st) == 0);
    close(t.fd);

    snprintf(rel, sizeof rel, "%s/in/f", t.root);
    CHECK_INT(tfile_remove_path(rel), 0);
    CHECK(lstat(rel, &st) < 0);
    CHECK(secret_intact(&t));
}

/* As a user without root's override of permissions: a folder of ours that a
 * cell made 000 (no read, write or search), and one made read-only, with files
 * in them, still go. Run as root, the case becomes nobody first. */
static int remove_locked_as_user(void)
{
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
        return 10;
    char root[64] = "/tmp/sandpit-tfile-locked-XXXXXX";
    if (!mkdtemp(root))
        return 11;
    char p[160];
    snprintf(p, sizeof p, "%s/t", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/t/locked", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/t/locked/f", root);
    close(open(p, O_WRONLY | O_CREAT, 0600));
    snprintf(p, sizeof p, "%s/t/readonly", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/t/readonly/g", root);
    close(open(p, O_WRONLY | O_CREAT, 0600));
    snprintf(p, sizeof p, "%s/t/readonly", root);
    chmod(p, 0500);
    snprintf(p, sizeof p, "%s/t/locked", root);
    chmod(p, 0);
    int fd = tfile_open_root(root);
    int rc = fd < 0 ? fd : tfile_remove_tree(fd, "t");
    struct stat st;
    snprintf(p, sizeof p, "%s/t", root);
    bool gone = lstat(p, &st) < 0;
    if (fd >= 0)
        close(fd);
    rmdir(root);
    return rc == 0 && gone ? 0 : 1;
}

static void test_a_locked_folder_is_removed_too(void)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(remove_locked_as_user());
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
}

/* A process that swaps in/d (a folder) and in/l (a link to ../out) as fast as it
 * can, for at most max seconds. */
static pid_t start_swapper(struct tree *t, unsigned max)
{
    char d[128], l[128];
    snprintf(d, sizeof d, "%s/in/d", t->root);
    snprintf(l, sizeof l, "%s/in/l", t->root);
    REQUIRE(symlink("../out", l) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(max);
        for (;;)
            syscall(SYS_renameat2, AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE);
    }
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_a_swap_race_never_reaches_outside(void)
{
    struct tree t;
    tree_init(&t);
    put(at(&t, "out/other"), "outside");
    struct stat secret;
    REQUIRE(stat(at(&t, "out/secret"), &secret) == 0);
    pid_t pid = start_swapper(&t, 8);
    int reached_outside = 0;
    for (int i = 0; i < 4000; i++) {
        /* Whichever name is the folder at the time, what opens is inside. */
        int fd = tfile_open(t.fd, i % 2 ? "d/secret" : "l/secret", O_RDONLY);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == secret.st_ino)
            reached_outside++;
        if (fd >= 0)
            close(fd);
        tfile_write(t.fd, i % 2 ? "d/secret" : "l/secret", "evil", 4, 0600,
                    TFILE_REPLACE);
        /* Refill the folder, then remove it while it is being swapped. */
        char g[160];
        snprintf(g, sizeof g, "%s/in/d/g%d", t.root, i);
        int gfd = open(g, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (gfd >= 0)
            close(gfd);
        if (i % 50 == 0) {
            tfile_remove_tree(t.fd, i % 100 ? "d" : "l");
            if (mkdir(at(&t, "in/d"), 0700) < 0 && errno != EEXIST)
                reached_outside += 1000;
            symlink("../out", at(&t, "in/l"));
        }
    }
    stop(pid);
    CHECK_INT(reached_outside, 0);
    CHECK(secret_intact(&t));
    struct stat st;
    CHECK(lstat(at(&t, "out/other"), &st) == 0);
    close(t.fd);
}

/* A private folder: made 0700, or taken if it is ours; a link in its place is
 * refused, and so is a mode that gives others a right, unless it is repaired. */
static void test_a_private_folder_is_ours_and_no_link(void)
{
    struct tree t;
    tree_init(&t);
    struct stat st;
    int fd = tfile_private_dir(at(&t, "p"), false);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0700);
    close(fd);
    REQUIRE(symlink("out", at(&t, "l")) == 0);
    CHECK_INT(tfile_private_dir(at(&t, "l"), true), -ELOOP);
    REQUIRE(chmod(at(&t, "out"), 0755) == 0);
    CHECK_INT(tfile_private_dir(at(&t, "out"), false), -EPERM);
    fd = tfile_private_dir(at(&t, "out"), true);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0700);
    close(fd);
    close(t.fd);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_opens_never_follow_a_link_or_leave_the_folder),
    TESTING_CASE(test_the_walk_without_openat2_refuses_the_same),
    TESTING_CASE(test_a_device_is_not_a_file),
    TESTING_CASE(test_writes_make_a_fresh_file_and_move_it_into_place),
    TESTING_CASE(test_writes_by_the_walk),
    TESTING_CASE(test_a_tree_is_removed_without_following_its_links),
    TESTING_CASE(test_a_locked_folder_is_removed_too),
    TESTING_CASE(test_a_private_folder_is_ours_and_no_link),
    TESTING_CASE_TIMEOUT(test_a_swap_race_never_reaches_outside, 30),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
