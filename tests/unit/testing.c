/* The unit-test runner: fork per test, alarm() for the timeout, a line per
 * failure or skip and one summary line per test file.
 *
 * A test that fails, crashes or times out never reaches its own clean-up, so
 * the runner does it: paths registered by the test (in memory shared with the
 * runner, since the test is a child) are removed once it has ended, and the
 * processes it left behind (its process group) are killed first, so that none
 * is still writing there. */
#include "testing.h"

#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REMOVE_MAX 32
#define REASON_MAX 512

static int failures;

/* Shared between the runner and the test it forked (and what that forked). */
struct removals {
    int n;
    char paths[REMOVE_MAX][PATH_MAX];
    char skip_reason[REASON_MAX]; /* set by testing_skip() */
};
static struct removals *removals;

enum outcome { OUTCOME_PASSED, OUTCOME_FAILED, OUTCOME_SKIPPED };

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

void testing_skip(const char *fmt, ...)
{
    fflush(NULL);
    if (removals) {
        /* After any reason given before (by another process of the same test). */
        size_t used = strnlen(removals->skip_reason, sizeof removals->skip_reason);
        if (used > 0 && used + 2 < sizeof removals->skip_reason) {
            memcpy(removals->skip_reason + used, "; ", 3);
            used += 2;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(removals->skip_reason + used, sizeof removals->skip_reason - used, fmt,
                  ap);
        va_end(ap);
    }
    _exit(failures ? 1 : 0);
}

void testing_remove_after(const char *path)
{
    if (!removals)
        return;
    if (removals->n >= REMOVE_MAX) {
        fprintf(stderr, "    more than %d paths to remove: %s is left behind\n",
                REMOVE_MAX, path);
        failures++;
        return;
    }
    snprintf(removals->paths[removals->n++], PATH_MAX, "%s", path);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Removes what the test registered (nothing outside those paths: FTW_PHYS does
 * not follow symbolic links). */
static void remove_registered(void)
{
    if (!removals)
        return;
    for (int i = 0; i < removals->n && i < REMOVE_MAX; i++)
        nftw(removals->paths[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    removals->n = 0;
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

static enum outcome run_one(const struct testing_case *c)
{
    fflush(NULL);
    removals->skip_reason[0] = 0;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return OUTCOME_FAILED;
    }
    if (pid == 0) {
        setpgid(0, 0);
        alarm(c->timeout_s ? c->timeout_s : 10);
        failures = 0;
        c->fn();
        fflush(NULL);
        _exit(failures ? 1 : 0);
    }
    setpgid(pid, pid); /* whichever of the two runs first */
    /* Wait without reaping, so that the test's process group cannot be reused
     * before what is left in it is killed. */
    siginfo_t si;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0)
        ;
    kill(-pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    remove_registered();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return removals->skip_reason[0] ? OUTCOME_SKIPPED : OUTCOME_PASSED;
    if (WIFSIGNALED(status))
        fprintf(stderr, "    %s: killed by signal %d%s\n", c->name, WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timed out)" : "");
    return OUTCOME_FAILED;
}

int testing_main(int argc, char **argv, const struct testing_case *cases)
{
    const char *prog = strrchr(argv[0], '/');
    prog = prog ? prog + 1 : argv[0];
    removals = mmap(NULL, sizeof *removals, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (removals == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    removals->n = 0;
    int run = 0, failed = 0, skipped = 0;
    for (const struct testing_case *c = cases; c->name; c++) {
        if (!wanted(argc, argv, c->name))
            continue;
        run++;
        switch (run_one(c)) {
        case OUTCOME_PASSED:
            break;
        case OUTCOME_FAILED:
            fprintf(stderr, "  FAIL %s.%s\n", prog, c->name);
            failed++;
            break;
        case OUTCOME_SKIPPED:
            fprintf(stderr, "  SKIP %s.%s: %s\n", prog, c->name, removals->skip_reason);
            skipped++;
            break;
        }
    }
    if (skipped)
        printf("%s: %d of %d passed, %d skipped\n", prog, run - failed - skipped, run,
               skipped);
    else
        printf("%s: %d of %d passed\n", prog, run - failed, run);
    return failed ? 1 : 0;
}
