/* The sandbox around a real embedded CPython, in the worker's order: stage 1, then
 * Py_InitializeEx(1) (CPython installs its signal handlers: SIGINT raises
 * KeyboardInterrupt, SIGXFSZ is ignored), then the preloads (numpy, pandas, whose import
 * runs `uname -p`, matplotlib), then stage 2, then the cells of
 * fixtures/sandbox_cells.py. This is what shows that CPython starts under Landlock, that
 * the preloads' subprocess happens before the filter, that the limits surface as
 * PermissionError, OSError(EFBIG) and MemoryError, and that an interrupt from outside
 * still reaches the sandboxed interpreter.
 */
#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"
#include "testing.h"

#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* AddressSanitizer's shadow memory counts against RLIMIT_DATA: no memory limit there. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The worker's memory limit (RLIMIT_DATA, and its cgroup's where there is one): the
 * cells size what must fail from it (MEMORY_LIMIT), not from the machine. */
#define MEMORY_LIMIT (UNDER_ASAN ? 0 : 2ull << 30)

struct env {
    char ws[64], td[64], home_secret[256];
    char *cells; /* the fixture, read before the sandbox hides it */
    int listen_fd, port;
    int ready[2]; /* the child writes a byte when it waits for the interrupt */
    struct sandbox_cgroup cgroup; /* as the supervisor makes one; version 0: none */
};

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    char chunk[4096];
    size_t n;
    while (out && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, out);
    fclose(f);
    if (out)
        fclose(out);
    return buf;
}

static void env_init(struct env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->ws, sizeof e->ws, "/tmp/sandpit-ws-XXXXXX");
    snprintf(e->td, sizeof e->td, "/tmp/sandpit-tmp-XXXXXX");
    REQUIRE(mkdtemp(e->ws));
    testing_remove_after(e->ws);
    REQUIRE(mkdtemp(e->td));
    testing_remove_after(e->td);
    const struct passwd *pw = getpwuid(getuid());
    REQUIRE(pw && pw->pw_dir);
    snprintf(e->home_secret, sizeof e->home_secret, "%s/.sandpit-secret-XXXXXX",
             pw->pw_dir);
    int fd = mkstemp(e->home_secret);
    REQUIRE(fd >= 0);
    testing_remove_after(e->home_secret);
    REQUIRE(write(fd, "secret\n", 7) == 7);
    close(fd);
    e->cells = read_all(testing_fixture("sandbox_cells.py"));
    REQUIRE(e->cells != NULL);

    e->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(e->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    REQUIRE(bind(e->listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(listen(e->listen_fd, 8) == 0);
    REQUIRE(getsockname(e->listen_fd, (struct sockaddr *)&a, &len) == 0);
    e->port = ntohs(a.sin_port);
    REQUIRE(pipe2(e->ready, O_CLOEXEC) == 0);
}

/* The files and folders go with the test: the runner removes them. */
static void env_release(struct env *e)
{
    close(e->listen_fd);
    close(e->ready[0]);
    if (e->ready[1] >= 0)
        close(e->ready[1]);
    free(e->cells);
}

/* Runs code in __main__; returns PyRun_SimpleString's result (0: no exception). */
static int run(const char *code)
{
    int rc = PyRun_SimpleString(code);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

/* The worker, in short. Exit codes name the step that went wrong. */
static _Noreturn void worker(const struct env *e)
{
    char mpl[128];
    snprintf(mpl, sizeof mpl, "%s/matplotlib", e->td);
    setenv("TMPDIR", e->td, 1);
    setenv("MPLCONFIGDIR", mpl, 1);
    setenv("OPENBLAS_NUM_THREADS", "2", 1);
    if (chdir(e->ws) < 0)
        _exit(10);

    sandbox_cgroup_join(&e->cgroup);
    struct sandbox_policy p;
    struct sandbox_report r;
    sandbox_policy_init(&p);
    p.workspace = e->ws;
    p.tmpdir = e->td;
    /* As the worker does: Debian's site-packages configuration lives here. */
    static const char *const python_paths[] = {"/etc/python" SANDPIT_PY_SHORT, NULL};
    p.ro_paths = python_paths;
    p.cgroup_note = e->cgroup.detail;
    p.memory_bytes = MEMORY_LIMIT;
    p.max_file_bytes = 1 << 20;
    sandbox_report_init(&r);
    if (sandbox_enter(&p, &r) != 0) {
        sandbox_report_print(&r, stderr);
        _exit(11);
    }

    Py_InitializeEx(1);
    if (run("import numpy, pandas, matplotlib\n"
            "matplotlib.use('Agg')\n"
            "import matplotlib.pyplot\n") != 0)
        _exit(12);

    if (sandbox_lock(&p, &r) != 0) {
        sandbox_report_print(&r, stderr);
        _exit(13);
    }
    /* Every layer, and the cgroup where this machine gives one (without, the
     * fallbacks are in force and the interpreter must work under them too). */
    for (size_t i = e->cgroup.version ? 0 : SANDBOX_LAYER_RLIMITS; i < r.n; i++)
        if (r.layers[i].state != SANDBOX_ACTIVE) {
            sandbox_report_print(&r, stderr);
            _exit(14);
        }

    char prelude[1024];
    snprintf(prelude, sizeof prelude,
             "WS = '%s'\nTD = '%s'\nHOME_SECRET = '%s'\nPORT = %d\nMEMORY_LIMIT = %llu\n",
             e->ws, e->td, e->home_secret, e->port, (unsigned long long)p.memory_bytes);
    if (run(prelude) != 0 || run(e->cells) != 0)
        _exit(15);

    /* An interrupt from outside the sandbox reaches the interpreter as KeyboardInterrupt.
     */
    if (write(e->ready[1], "r", 1) != 1)
        _exit(16);
    if (run("import time\n"
            "try:\n"
            "    time.sleep(20)\n"
            "    raise AssertionError('not interrupted')\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted: KeyboardInterrupt')\n") != 0)
        _exit(17);
    if (run("import os; assert os.getpid() > 0") != 0) /* and the interpreter goes on */
        _exit(18);
    _exit(0);
}

static void test_python_under_the_sandbox(void)
{
    struct env e;
    env_init(&e);
    struct sandbox_cgroup_limits lim = {MEMORY_LIMIT, SANDBOX_MAX_TASKS, 0};
    if (sandbox_cgroup_create(&e.cgroup, 1, &lim) < 0)
        fprintf(stderr, "    no cgroup here (%s): the worker runs without\n",
                e.cgroup.detail);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        worker(&e);
    sandbox_cgroup_started(&e.cgroup, pid);
    close(e.ready[1]);
    e.ready[1] = -1;

    char c;
    ssize_t n;
    while ((n = read(e.ready[0], &c, 1)) < 0 && errno == EINTR)
        ;
    /* read() returns 0 only if the child died first; its status tells why */
    if (n == 1) {
        struct timespec pause = {0, 300 * 1000 * 1000};
        nanosleep(&pause, NULL);
        CHECK(kill(pid, SIGINT) == 0);
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        fprintf(stderr, "    worker killed by signal %d\n", WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0)
        fprintf(stderr, "    worker exited with %d (see the step in worker())\n",
                WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!e.cgroup.version || sandbox_cgroup_remove(&e.cgroup) == 0);
    sandbox_cgroup_release(&e.cgroup);
    struct stat st;
    CHECK(stat("/tmp/sandpit-escaped", &st) < 0);
    env_release(&e);
}

static const struct testing_case cases[] = {
    TESTING_CASE_TIMEOUT(test_python_under_the_sandbox, 120),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
