/* Unit tests for sandbox/stop.c: a stopped worker's processes all end.
 *
 * The test process plays the supervisor: it becomes a subreaper, forks a "worker"
 * that forks as its preloads might (a child in its process group, a daemon in a
 * session of its own, orphaned by a double fork), and a "kept" process that must
 * survive. A pipe tells the test when every process is there: each holds its write
 * end, so the read end sees EOF only once all of them are gone.
 */
#include "sandbox/stop.h"
#include "testing.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_S 60

/* In a forked process: says it is there (one byte), then sleeps, its copy of the
 * pipe's write end open until it ends. */
static _Noreturn void linger(int ready)
{
    if (write(ready, "x", 1) != 1)
        _exit(1);
    sleep(SLEEP_S);
    _exit(0);
}

/* The worker: a child and a daemon of its own, then it sleeps too. */
static pid_t start_worker(int ready)
{
    pid_t w = fork();
    if (w != 0)
        return w;
    if (fork() == 0)
        linger(ready);
    pid_t d = fork();
    if (d == 0) {
        setsid();
        if (fork() == 0)
            linger(ready);
        _exit(0);
    }
    waitpid(d, NULL, 0);
    linger(ready);
}

static int set_nonblock(int fd)
{
    return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void read_bytes(int fd, int n)
{
    char c;
    for (int i = 0; i < n; i++)
        REQUIRE(read(fd, &c, 1) == 1);
}

/* True once every holder of the pipe's write end has ended (EOF), within 5 s. */
static bool all_gone(int fd)
{
    for (int i = 0; i < 500; i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        char c;
        ssize_t n = read(fd, &c, 1);
        if (n == 0)
            return true;
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return false;
}

static void test_tree_ends_every_descendant(void)
{
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int p[2];
    REQUIRE(pipe(p) == 0);
    pid_t w = start_worker(p[1]);
    REQUIRE(w > 0);
    close(p[1]);
    read_bytes(p[0], 3);
    /* what the worker left has come back to us, or is below it */
    CHECK(sandbox_stop_tree(getpid(), NULL, 0) >= 3);
    REQUIRE(set_nonblock(p[0]) == 0);
    CHECK(all_gone(p[0]));
}

static void test_tree_keeps_what_it_is_told(void)
{
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int p[2], k[2];
    REQUIRE(pipe(k) == 0);
    pid_t kept = start_worker(k[1]);
    REQUIRE(kept > 0);
    close(k[1]);
    read_bytes(k[0], 3);
    REQUIRE(pipe(p) == 0); /* after the kept one: it does not hold this one */
    pid_t w = start_worker(p[1]);
    REQUIRE(w > 0);
    close(p[1]);
    read_bytes(p[0], 3);
    /* The kept worker's daemon is an orphan by now, a child of ours like any other
     * orphan: only the kept process and what is below it are spared. */
    const pid_t keep[] = {0, kept};
    CHECK(sandbox_stop_tree(getpid(), keep, 2) >= 3);
    REQUIRE(set_nonblock(p[0]) == 0);
    CHECK(all_gone(p[0]));
    CHECK(kill(kept, 0) == 0);
    kill(kept, SIGKILL);
}

static void test_no_group_is_said(void)
{
    struct sandbox_cgroup cg;
    sandbox_cgroup_init(&cg);
    CHECK_INT(sandbox_stop_group(&cg), -ENOENT);
    CHECK_INT(sandbox_stop_group_dir("/nonexistent/sandpit-group"), -ENOENT);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_tree_ends_every_descendant),
    TESTING_CASE(test_tree_keeps_what_it_is_told),
    TESTING_CASE(test_no_group_is_said),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
