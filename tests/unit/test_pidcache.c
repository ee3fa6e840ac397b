/* Unit tests for pidcache: getpid() gives the process's own id without a
 * system call once it has asked, and a child of fork() gets its own id, not
 * its parent's. */
#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"

static pid_t kernel_pid(void)
{
    return (pid_t)syscall(SYS_getpid);
}

/* The exit status of a child running fn: 0 when fn held. */
static int in_child(int (*fn)(void))
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(fn());
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int getpid_survives_a_denied_system_call(void)
{
    pid_t before = getpid();
    if (before != kernel_pid())
        return 1;
    /* From here the system call fails with EPERM: only a cached answer is right. */
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(getpid), 0) != 0 ||
        seccomp_load(ctx) != 0)
        return 2;
    if (kernel_pid() != -1)
        return 3; /* the filter is not in force: the case proves nothing */
    return getpid() == before ? 0 : 4;
}

static void test_getpid_is_answered_without_a_system_call(void)
{
    CHECK_INT(getpid(), kernel_pid());
    CHECK_INT(in_child(getpid_survives_a_denied_system_call), 0);
}

static pid_t parent;

static int the_child_has_its_own_id(void)
{
    pid_t own = getpid();
    return own == kernel_pid() && own != parent ? 0 : 1;
}

static void test_a_child_of_fork_gets_its_own_id(void)
{
    parent = getpid(); /* the cache is filled in the parent before it forks */
    CHECK_INT(in_child(the_child_has_its_own_id), 0);
    CHECK_INT(getpid(), parent);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_getpid_is_answered_without_a_system_call),
    TESTING_CASE(test_a_child_of_fork_gets_its_own_id),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
