/* The unit-test runner: fork per test, alarm() for the timeout, a line per
 * failure and one summary line per test file. */
#include "testing.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

bool testing_check(bool ok, const char *expr, const char *file, int line)
{
    if (!ok) {
        fprintf(stderr, "    %s:%d: check failed: %s\n", file, line, expr);
        failures++;
    }
    return ok;
}

bool testing_check_str(const char *got, const char *want, const char *expr,
                       const char *file, int line)
{
    bool ok = got && want ? strcmp(got, want) == 0 : got == want;
    if (!ok) {
        fprintf(stderr, "    %s:%d: %s is \"%s\", expected \"%s\"\n", file, line, expr,
                got ? got : "(null)", want ? want : "(null)");
        failures++;
    }
    return ok;
}

bool testing_check_int(long long got, long long want, const char *expr, const char *file,
                       int line)
{
    if (got != want) {
        fprintf(stderr, "    %s:%d: %s is %lld, expected %lld\n", file, line, expr, got,
                want);
        failures++;
    }
    return got == want;
}

void testing_abort(void)
{
    fflush(stderr);
    _exit(1);
}

const char *testing_fixture(const char *name)
{
    static char path[PATH_MAX];
    const char *dir = getenv("SANDPIT_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/unit/fixtures", name);
    return path;
}

static bool wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

static int run_one(const struct testing_case *c)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        alarm(c->timeout_s ? c->timeout_s : 10);
        failures = 0;
        c->fn();
        fflush(NULL);
        _exit(failures ? 1 : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "    %s: killed by signal %d%s\n", c->name, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timed out)" : "");
    return 1;
}

int testing_main(int argc, char **argv, const struct testing_case *cases)
{
    const char *prog = strrchr(argv[0], '/');
    prog = prog ? prog + 1 : argv[0];
    int run = 0, failed = 0;
    for (const struct testing_case *c = cases; c->name; c++) {
        if (!wanted(argc, argv, c->name))
            continue;
        run++;
        if (run_one(c) != 0) {
            fprintf(stderr, "  FAIL %s.%s\n", prog, c->name);
            failed++;
        }
    }
    printf("%s: %d of %d passed\n", prog, run - failed, run);
    return failed ? 1 : 0;
}
