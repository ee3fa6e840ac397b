/* A small unit-test runner: each test runs in its own forked process with a
 * timeout, so a crash, an abort or a hang fails that test alone (seccomp and
 * Py_Initialize cannot be undone in a process, and neither can a segfault).
 *
 * What a test makes on disk, it registers with testing_remove_after(); the runner
 * removes it after the test, and ends whatever processes the test left running.
 *
 * A test that cannot run here, for want of what the machine lacks (a kernel
 * feature, a namespace, a cgroup), says so with testing_skip(reason): the runner
 * reports it by name, with the reason, and counts it apart from those that passed.
 *
 * A test file lists its tests in a table and calls testing_main():
 *
 *     static void test_x(void) { CHECK(1 + 1 == 2); }
 *     static const struct testing_case cases[] = {TESTING_CASE(test_x), {0}};
 *     int main(int argc, char **argv) { return testing_main(argc, argv, cases); }
 */
#ifndef SANDPIT_TESTING_H
#define SANDPIT_TESTING_H

#include <stdbool.h>
#include <stddef.h>

struct testing_case {
    const char *name;
    void (*fn)(void);
    unsigned timeout_s; /* 0: the default of 10 s */
};

#define TESTING_CASE(fn)                                                                 \
    {                                                                                    \
#fn, fn, 0                                                                       \
    }
#define TESTING_CASE_TIMEOUT(fn, s)                                                      \
    {                                                                                    \
#fn, fn, s                                                                       \
    }

/* Records a failure (with file and line) and goes on; the test fails at its end. */
#define CHECK(cond) testing_check((cond), #cond, __FILE__, __LINE__)
/* Records a failure and ends the test at once. */
#define REQUIRE(cond)                                                                    \
    do {                                                                                 \
        if (!testing_check((cond), #cond, __FILE__, __LINE__))                           \
            testing_abort();                                                             \
    } while (0)
#define CHECK_STR(a, b) testing_check_str((a), (b), #a, __FILE__, __LINE__)
#define CHECK_INT(a, b)                                                                  \
    testing_check_int((long long)(a), (long long)(b), #a, __FILE__, __LINE__)

bool testing_check(bool ok, const char *expr, const char *file, int line);
bool testing_check_str(const char *got, const char *want, const char *expr,
                       const char *file, int line);
bool testing_check_int(long long got, long long want, const char *expr, const char *file,
                       int line);
_Noreturn void testing_abort(void);

/* Ends the calling process, and marks the test skipped: reason (a printf format)
 * says what this machine lacks, and so what was not checked. A check that failed
 * before still fails the test. A process that the test forked may call it too: the
 * reason reaches the runner through memory shared with it, that process exits 0
 * (nothing failed) and the test goes on; the runner reports it skipped at its end
 * unless something failed. (The skip status of libuv's RETURN_SKIP.) */
_Noreturn void testing_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Registers a file or folder that the test made, for the runner to remove (a
 * folder with what is in it) once the test's process has ended, however it ended:
 * passed, failed, crashed or timed out. Call it as soon as the path exists. */
void testing_remove_after(const char *path);

/* Path of a fixture file under tests/unit/fixtures/ (borrowed static buffer). */
const char *testing_fixture(const char *name);

/* Runs every case (or only those named on the command line); returns the exit status. */
int testing_main(int argc, char **argv, const struct testing_case *cases);

#endif
