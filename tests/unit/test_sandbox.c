/* Unit tests for sandbox/: each layer on its own (through sandbox/internal.h), then the
 * two stages together, then the report's honesty.
 *
 * A sandbox cannot be undone, so each check runs in a child of the test process
 * (sandboxed_run): the test process prepares a workspace, a tmpdir, a file outside them,
 * a secret in the home folder and a listening socket, lets the child apply the policy
 * and assert the outcome, then cleans up. A child counts its own failures (EXPECT_*) and
 * exits non-zero if any; the test then fails with the child's messages above it.
 */
#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "testing.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* AddressSanitizer's shadow memory is private and writable, so it counts against
 * RLIMIT_DATA: under ASan every later mmap fails once a memory limit is set. */
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

/* --- checks that work in a child ------------------------------------------------ */

static int child_failures;

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!testing_check((cond), #cond, __FILE__, __LINE__))                           \
            child_failures++;                                                            \
    } while (0)

#define EXPECT_INT(a, b)                                                                 \
    do {                                                                                 \
        if (!testing_check_int((long long)(a), (long long)(b), #a, __FILE__, __LINE__))  \
            child_failures++;                                                            \
    } while (0)

/* call must fail with -1 and errno err. */
#define EXPECT_ERRNO(call, err)                                                          \
    do {                                                                                 \
        errno = 0;                                                                       \
        long rc_ = (long)(call);                                                         \
        int e_ = errno;                                                                  \
        if (!expect_errno(rc_, e_, (err), #call, __FILE__, __LINE__))                    \
            child_failures++;                                                            \
    } while (0)

/* call must succeed (not -1). */
#define EXPECT_OK(call)                                                                  \
    do {                                                                                 \
        errno = 0;                                                                       \
        long rc_ = (long)(call);                                                         \
        int e_ = errno;                                                                  \
        if (rc_ == -1) {                                                                 \
            fprintf(stderr, "    %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                    strerror(e_));                                                       \
            child_failures++;                                                            \
        }                                                                                \
    } while (0)

static bool expect_errno(long rc, int got, int want, const char *expr, const char *file,
                         int line)
{
    if (rc == -1 && got == want)
        return true;
    if (rc == -1)
        fprintf(stderr, "    %s:%d: %s failed with %s, expected %s\n", file, line, expr,
                strerror(got), strerror(want));
    else
        fprintf(stderr, "    %s:%d: %s returned %ld, expected failure with %s\n", file,
                line, expr, rc, strerror(want));
    return false;
}

/* --- the environment a test prepares ---------------------------------------------- */

struct env {
    char ws[64];           /* workspace */
    char td[64];           /* private tmpdir */
    char outside[64];      /* a file in /tmp, outside both */
    char home_secret[256]; /* a file in the home folder */
    int listen_fd;         /* TCP listener on 127.0.0.1 */
    int port;
};

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static void env_init(struct env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->ws, sizeof e->ws, "/tmp/sandpit-ws-XXXXXX");
    snprintf(e->td, sizeof e->td, "/tmp/sandpit-tmp-XXXXXX");
    snprintf(e->outside, sizeof e->outside, "/tmp/sandpit-outside-XXXXXX");
    REQUIRE(mkdtemp(e->ws));
    testing_remove_after(e->ws);
    REQUIRE(mkdtemp(e->td));
    testing_remove_after(e->td);
    int fd = mkstemp(e->outside);
    REQUIRE(fd >= 0);
    testing_remove_after(e->outside);
    REQUIRE(write(fd, "outside\n", 8) == 8);
    close(fd);

    const struct passwd *pw = getpwuid(getuid());
    REQUIRE(pw && pw->pw_dir);
    snprintf(e->home_secret, sizeof e->home_secret, "%s/.sandpit-secret-XXXXXX",
             pw->pw_dir);
    fd = mkstemp(e->home_secret);
    REQUIRE(fd >= 0);
    testing_remove_after(e->home_secret);
    REQUIRE(write(fd, "secret\n", 7) == 7);
    close(fd);

    e->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(e->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    REQUIRE(bind(e->listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(listen(e->listen_fd, 8) == 0);
    REQUIRE(getsockname(e->listen_fd, (struct sockaddr *)&a, &len) == 0);
    e->port = ntohs(a.sin_port);
}

/* The files and folders go with the test: the runner removes them. */
static void env_release(struct env *e)
{
    close(e->listen_fd);
}

static void policy_for(const struct env *e, struct sandbox_policy *p)
{
    sandbox_policy_init(p);
    p->workspace = e->ws;
    p->tmpdir = e->td;
}

/* Runs body in a child and fails the test unless it exits 0. */
static void sandboxed_run(void (*body)(const struct env *), const struct env *e)
{
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        child_failures = 0;
        body(e);
        fflush(NULL);
        _exit(child_failures ? 1 : 0);
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        fprintf(stderr, "    sandboxed child killed by signal %d\n", WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void with_env(void (*body)(const struct env *))
{
    struct env e;
    env_init(&e);
    sandboxed_run(body, &e);
    env_release(&e);
}

/* Both stages with the default policy for e; the child stops here if they fail. */
static void enter_and_lock(const struct env *e, struct sandbox_policy *p,
                           struct sandbox_report *r)
{
    sandbox_report_init(r);
    int rc = sandbox_enter(p, r);
    if (rc != 0)
        sandbox_report_print(r, stderr);
    EXPECT_INT(rc, 0);
    rc = sandbox_lock(p, r);
    if (rc != 0)
        sandbox_report_print(r, stderr);
    EXPECT_INT(rc, 0);
    (void)e;
}

/* --- small probes ------------------------------------------------------------------ */

static int open_read(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    return n < 0 ? -1 : (int)n;
}

static int create_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, "hello\n", 6);
    close(fd);
    return n == 6 ? 0 : -1;
}

static int connect_port(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = connect(s, (struct sockaddr *)&a, sizeof a);
    int err = errno;
    close(s);
    errno = err;
    return rc;
}

static void *thread_ok(void *arg)
{
    *(int *)arg = 42;
    return NULL;
}

static bool thread_runs(void)
{
    pthread_t t;
    int v = 0;
    if (pthread_create(&t, NULL, thread_ok, &v) != 0)
        return false;
    return pthread_join(t, NULL) == 0 && v == 42;
}

/* execve("/bin/true") in a forked child (before the filter, fork works). */
static int try_execve(void)
{
    char *argv[] = {"true", NULL};
    return (int)execve("/bin/true", argv, environ);
}

/* Reads a "Name:\tvalue" line of /proc/self/status into buf. */
static bool status_field(const char *name, char *buf, size_t size)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return false;
    char line[256];
    size_t len = strlen(name);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            snprintf(buf, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
            buf[strcspn(buf, "\n")] = '\0';
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* --- policy and report ---------------------------------------------------------- */

static void test_policy_defaults(void)
{
    struct sandbox_policy p;
    memset(&p, 0xab, sizeof p);
    sandbox_policy_init(&p);
    CHECK(p.enabled);
    CHECK(!p.network);
    CHECK(p.workspace == NULL && p.tmpdir == NULL);
    CHECK(p.ro_paths == NULL && p.rw_paths == NULL && p.hidden_paths == NULL);
    CHECK_INT(p.memory_bytes, 0);
    CHECK_INT(p.max_file_bytes, 0);
    CHECK_INT(p.max_open_files, SANDBOX_DEFAULT_OPEN_FILES);
}

static void test_report_names_and_print(void)
{
    struct sandbox_report r;
    sandbox_report_init(&r);
    CHECK_INT(r.n, 8);
    static const char *const names[] = {
        "cgroup",          "rlimits",      "user-namespace", "network-namespace",
        "mount-namespace", "capabilities", "landlock",       "seccomp"};
    for (size_t i = 0; i < 8; i++) {
        CHECK_STR(r.layers[i].name, names[i]);
        CHECK_INT(r.layers[i].state, SANDBOX_PENDING);
        CHECK(sandbox_report_find(&r, names[i]) == &r.layers[i]);
    }
    CHECK(sandbox_report_find(&r, "selinux") == NULL);
    CHECK_STR(sandbox_state_name(SANDBOX_ACTIVE), "active");
    CHECK_STR(sandbox_state_name(SANDBOX_UNAVAILABLE), "unavailable");
    CHECK_STR(sandbox_state_name(SANDBOX_DISABLED), "disabled");
    CHECK_STR(sandbox_state_name(SANDBOX_FAILED), "failed");
    CHECK_STR(sandbox_state_name(SANDBOX_PENDING), "pending");

    sandbox__layer_set(&r.layers[0], SANDBOX_ACTIVE, "data %d", 1);
    sandbox__layer_note(&r.layers[0], "more");
    CHECK_STR(r.layers[0].detail, "data 1; more");
    for (int i = 0; i < 100; i++)
        sandbox__layer_note(&r.layers[0], "a long note that will not fit");
    CHECK(strlen(r.layers[0].detail) < SANDBOX_DETAIL_MAX);
    CHECK(strcmp(r.layers[0].detail + strlen(r.layers[0].detail) - 3, "...") == 0);

    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    REQUIRE(f);
    sandbox_report_print(&r, f);
    fclose(f);
    CHECK(strstr(text, "sandbox: cgroup            active: data 1; more") == text);
    CHECK(strstr(text, "sandbox: seccomp           pending\n") != NULL);
    free(text);

    char buf[32];
    sandbox__format_size(buf, sizeof buf, 1ull << 30);
    CHECK_STR(buf, "1 GiB");
    sandbox__format_size(buf, sizeof buf, 100ull << 20);
    CHECK_STR(buf, "100 MiB");
    sandbox__format_size(buf, sizeof buf, 1000);
    CHECK_STR(buf, "1000 bytes");
}

/* --- sandbox off ------------------------------------------------------------------- */

static void body_disabled(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.enabled = false;
    sandbox_report_init(&r);
    EXPECT_INT(sandbox_enter(&p, &r), 0);
    EXPECT_INT(sandbox_lock(&p, &r), 0);
    for (size_t i = 0; i < r.n; i++)
        EXPECT_INT(r.layers[i].state, SANDBOX_DISABLED);
    EXPECT_INT(r.landlock_abi, 0);
    /* and nothing was applied */
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    EXPECT(pid > 0);
    EXPECT(pid > 0 && waitpid(pid, NULL, 0) == pid);
    EXPECT(open_read("/usr/lib/python3.11/os.py") > 0);
    if (getuid() == 0)
        EXPECT(open_read("/etc/shadow") >= 0);
    EXPECT_OK(connect_port(e->port));
    EXPECT_INT(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
}

static void test_disabled_applies_nothing(void)
{
    with_env(body_disabled);
}

/* --- rlimits --------------------------------------------------------------------- */

static void body_rlimits(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.memory_bytes = 512ull << 20;
    p.max_file_bytes = 1 << 20;
    p.max_open_files = 100;
    sandbox_report_init(&r);
    EXPECT_INT(sandbox__rlimits_apply(&p, &r.layers[SANDBOX_LAYER_RLIMITS]), 0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_RLIMITS].state, SANDBOX_ACTIVE);
    /* An AddressSanitizer build leaves the memory limit out, and says so. */
    EXPECT(strstr(r.layers[SANDBOX_LAYER_RLIMITS].detail,
                  UNDER_ASAN ? "data unlimited, file size 1 MiB, open files 100"
                             : "data 512 MiB, file size 1 MiB, open files 100") != NULL);
    EXPECT(!UNDER_ASAN || strstr(r.layers[SANDBOX_LAYER_RLIMITS].detail,
                                 "memory limit not applied") != NULL);
    struct {
        int res;
        rlim_t want;
    } expect[] = {{RLIMIT_DATA, UNDER_ASAN ? RLIM_INFINITY : 512ull << 20},
                  {RLIMIT_FSIZE, 1 << 20},
                  {RLIMIT_NOFILE, 100},
                  {RLIMIT_CORE, 0},
                  {RLIMIT_RTPRIO, 0}};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        struct rlimit l;
        EXPECT_OK(getrlimit(expect[i].res, &l));
        EXPECT_INT(l.rlim_cur, expect[i].want);
        EXPECT_INT(l.rlim_max, expect[i].want); /* hard too: user code cannot raise it */
    }
}

static void test_rlimits_soft_and_hard(void)
{
    with_env(body_rlimits);
}

static void body_fsize(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.max_file_bytes = 64 << 10;
    enter_and_lock(e, &p, &r);
    signal(SIGXFSZ, SIG_IGN); /* as CPython does */

    struct rlimit l = {RLIM_INFINITY, RLIM_INFINITY};
    EXPECT_ERRNO(setrlimit(RLIMIT_FSIZE, &l), EPERM); /* no capability to raise it */

    char path[128], buf[100 << 10];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/big", e->ws);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT(fd >= 0);
    EXPECT_INT(write(fd, buf, sizeof buf), 64 << 10); /* short write up to the limit */
    EXPECT_ERRNO(write(fd, buf, sizeof buf), EFBIG);
    close(fd);
}

static void test_rlimit_fsize_gives_efbig(void)
{
    with_env(body_fsize);
}

static void body_data(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.memory_bytes = 256ull << 20;
    enter_and_lock(e, &p, &r);
    void *small = malloc(16 << 20);
    EXPECT(small != NULL);
    if (small)
        memset(small, 1, 16 << 20);
    void *big = malloc(512ull << 20);
    EXPECT(big == NULL);
    free(big);
    free(small);
    /* threads still start under the limit */
    EXPECT(thread_runs());
}

static void test_rlimit_data_fails_big_malloc(void)
{
    /* Under AddressSanitizer no memory limit can be set (its shadow counts as
     * data): what must hold there is that the report says so, and no limit is
     * claimed, which body_rlimits checks. */
    with_env(UNDER_ASAN ? body_rlimits : body_data);
}

/* --- namespaces -------------------------------------------------------------------- */

static void body_userns(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    uid_t uid = geteuid();
    policy_for(e, &p);
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_USERNS].state, SANDBOX_ACTIVE);
    EXPECT_INT(geteuid(), uid);

    char want[64], got[64] = "";
    snprintf(want, sizeof want, "%u %u 1", (unsigned)uid, (unsigned)uid);
    FILE *f = fopen("/proc/self/uid_map", "re");
    EXPECT(f != NULL);
    if (f) {
        EXPECT(fgets(got, sizeof got, f) != NULL);
        fclose(f);
    }
    /* "         0          0          1" */
    unsigned a = 1, b = 1, c = 0;
    EXPECT_INT(sscanf(got, "%u %u %u", &a, &b, &c), 3);
    EXPECT(a == uid && b == uid && c == 1);
    EXPECT_INT(create_file(e->ws, "owned"), 0);
}

static void test_userns_maps_uid_to_itself(void)
{
    struct env e;
    env_init(&e);
    sandboxed_run(body_userns, &e);
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s/owned", e.ws);
    CHECK(stat(path, &st) == 0);
    CHECK_INT(st.st_uid, geteuid()); /* files in the workspace keep their owner */
    CHECK_INT(st.st_gid, getegid());
    env_release(&e);
}

/* Page faults of the children reaped so far: it grows when stage 1 forks a trial. */
static long children_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_CHILDREN, &u) == 0 ? u.ru_minflt + u.ru_majflt : -1;
}

/* The trial started early is what stage 1 goes by, waited for if need be, with
 * no trial of its own; one that tried other namespaces is not used. */
static void body_early_trial(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    struct sandbox_trial t;
    sandbox_trial_start(&t, false);
    EXPECT(t.pid > 0 && !t.done);
    p.trial = &t;
    sandbox_trial_finish(&t);
    if (t.err != 0)
        testing_skip("this machine refuses user namespaces (%s): stage 1 then tries "
                     "each namespace itself, with no early trial to go by",
                     strerror(t.err));
    long before = children_faults();
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_USERNS].state, SANDBOX_ACTIVE);
    EXPECT_INT(children_faults(), before); /* no child of its own */
}

static void body_early_trial_waited_for(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    struct sandbox_trial t;
    sandbox_trial_start(&t, false);
    p.trial = &t;
    sandbox_report_init(&r);
    sandbox_enter(&p, &r);
    EXPECT(t.done);
    EXPECT_INT(t.pid, 0);
    if (t.err == 0)
        EXPECT_INT(r.layers[SANDBOX_LAYER_USERNS].state, SANDBOX_ACTIVE);
}

static void body_other_trial_not_used(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p); /* no network: the trial of a policy with it does not fit */
    struct sandbox_trial other;
    sandbox_trial_start(&other, true);
    sandbox_trial_finish(&other);
    p.trial = &other;
    other.done = false; /* were it used, stage 1 would read its closed pipe */
    long before = children_faults();
    sandbox_report_init(&r);
    sandbox_enter(&p, &r);
    EXPECT(!other.done);
    EXPECT(children_faults() > before); /* it tried for itself */
}

static void test_the_early_trial_of_the_namespaces_is_what_stage_1_goes_by(void)
{
    with_env(body_early_trial);
    with_env(body_early_trial_waited_for);
    with_env(body_other_trial_not_used);
}

static void body_netns(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    sandbox_report_init(&r);
    EXPECT_OK(connect_port(e->port)); /* the listener is there */

    /* The namespaces alone: no Landlock, no seccomp, to see this layer by itself. */
    EXPECT_INT(sandbox__namespaces_enter(&p, &r.layers[SANDBOX_LAYER_USERNS],
                                         &r.layers[SANDBOX_LAYER_NETNS],
                                         &r.layers[SANDBOX_LAYER_MOUNTNS], false),
               0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_NETNS].state, SANDBOX_ACTIVE);

    struct if_nameindex *ifs = if_nameindex();
    EXPECT(ifs != NULL);
    int n = 0;
    for (struct if_nameindex *i = ifs; i && i->if_index; i++, n++)
        EXPECT_INT(strcmp(i->if_name, "lo"), 0);
    EXPECT_INT(n, 1);
    if (ifs)
        if_freenameindex(ifs);

    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT(s >= 0);
    struct ifreq req;
    memset(&req, 0, sizeof req);
    snprintf(req.ifr_name, sizeof req.ifr_name, "lo");
    EXPECT_OK(ioctl(s, SIOCGIFFLAGS, &req));
    EXPECT(!(req.ifr_flags & IFF_UP));
    close(s);

    EXPECT_ERRNO(connect_port(e->port), ENETUNREACH);
}

static void test_netns_has_only_a_down_loopback(void)
{
    with_env(body_netns);
}

/* Only a connected AF_UNIX stream pair, whatever the network: a datagram or seqpacket
 * pair (SOCK_RAW is a datagram pair to AF_UNIX) reaches any path. The pair still
 * works, with its flags. */
static void expect_stream_pairs_only(bool network)
{
    int sv[2];
    static const int types[] = {SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW,
                                SOCK_DGRAM | SOCK_CLOEXEC, SOCK_DGRAM | SOCK_NONBLOCK};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        EXPECT_ERRNO(socketpair(AF_UNIX, types[i], 0, sv), EPERM);
    EXPECT_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EPERM);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
    char c = 0;
    EXPECT_INT(send(sv[0], "x", 1, 0), 1); /* sendto with no address */
    EXPECT_INT(recv(sv[1], &c, 1, 0), 1);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "/nonexistent/sandpit.sock");
    int want = network ? EISCONN : EPERM;
    EXPECT_ERRNO(sendto(sv[0], "x", 1, 0, (struct sockaddr *)&sun, sizeof sun), want);
    struct iovec iov = {.iov_base = "x", .iov_len = 1};
    struct msghdr m = {
        .msg_name = &sun, .msg_namelen = sizeof sun, .msg_iov = &iov, .msg_iovlen = 1};
    EXPECT_ERRNO(sendmsg(sv[0], &m, 0), want);
    if (!network) {
        EXPECT_ERRNO(connect(sv[0], (struct sockaddr *)&sun, sizeof sun), EPERM);
        EXPECT_ERRNO(bind(sv[1], (struct sockaddr *)&sun, sizeof sun), EPERM);
        m.msg_name = NULL;
        m.msg_namelen = 0;
        EXPECT_ERRNO(sendmsg(sv[0], &m, 0), EPERM); /* its address cannot be read */
    }
    close(sv[0]);
    close(sv[1]);
}

static void body_network_on(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.network = true;
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_NETNS].state, SANDBOX_DISABLED);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_LANDLOCK].detail, "TCP allowed") != NULL);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_SECCOMP].detail, "TCP and UDP") != NULL);

    EXPECT_OK(connect_port(e->port));
    int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT(s >= 0);
    close(s);
    EXPECT_ERRNO(socket(AF_UNIX, SOCK_STREAM, 0), EPERM);
    EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, 0), EPERM);
    EXPECT_ERRNO(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
    EXPECT_ERRNO(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
    EXPECT_ERRNO(socket(AF_INET, SOCK_PACKET, 0), EPERM);
    EXPECT_ERRNO(socket((int)(AF_UNIX | (1u << 16)), SOCK_STREAM, 0), EPERM);
    /* TCP and UDP only: not UDP-Lite, SCTP or MPTCP */
    EXPECT_ERRNO(socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE), EPERM);
    EXPECT_ERRNO(socket(AF_INET6, SOCK_STREAM, IPPROTO_SCTP), EPERM);
    EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */), EPERM);
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    EXPECT(s >= 0);
    close(s);
    expect_stream_pairs_only(true);
}

static void test_network_on_allows_tcp_only(void)
{
    with_env(body_network_on);
}

static void body_mount_readonly(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_MOUNTNS].state, SANDBOX_ACTIVE);
    /* What Landlock does not govern is stopped by the read-only mounts. */
    EXPECT_ERRNO(chmod(e->outside, 04755), EROFS);
    EXPECT_ERRNO(chown(e->outside, 1, 1), EROFS);
    EXPECT_ERRNO(utimes(e->outside, NULL), EROFS);
    EXPECT_ERRNO(chmod("/usr/bin/python3.11", 04755), EROFS);
    /* inside the read-write binds, all of it works */
    EXPECT_INT(create_file(e->ws, "f"), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/f", e->ws);
    EXPECT_OK(chmod(path, 0600));
    EXPECT_OK(utimes(path, NULL));
    EXPECT_INT(create_file(e->td, "f"), 0);
    /* devices on a read-only mount can still be written */
    int fd = open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC);
    EXPECT(fd >= 0);
    EXPECT_INT(write(fd, "x", 1), 1);
    close(fd);
    /* the cwd follows the bind */
    EXPECT_OK(chdir(e->ws));
    EXPECT_INT(create_file(".", "relative"), 0);
}

static void test_mountns_makes_the_rest_read_only(void)
{
    struct env e;
    env_init(&e);
    sandboxed_run(body_mount_readonly, &e);
    struct stat st;
    CHECK(stat(e.outside, &st) == 0);
    CHECK_INT(st.st_mode & 07777, 0600); /* mkstemp's mode, untouched */
    env_release(&e);
}

static void body_landlock_alone_chmod(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    sandbox_report_init(&r);
    EXPECT_INT(
        sandbox__landlock_apply(&p, &r.layers[SANDBOX_LAYER_LANDLOCK], &r.landlock_abi),
        0);
    /* The gap the mount namespace closes: Landlock (ABI <= 7) lets this through. */
    EXPECT_OK(chmod(e->outside, 0640));
    EXPECT(open_read(e->outside) < 0);
}

static void test_landlock_alone_does_not_govern_chmod(void)
{
    with_env(body_landlock_alone_chmod);
}

static void body_hidden(const struct env *e)
{
    char conn[128], dir[128], inner[160], other[128];
    snprintf(conn, sizeof conn, "%s/kernel-1234.json", e->ws);
    snprintf(dir, sizeof dir, "%s/runtime", e->ws);
    snprintf(inner, sizeof inner, "%s/kernel-5678.json", dir);
    snprintf(other, sizeof other, "%s/notes.txt", e->ws);
    const char *hidden[] = {conn, dir, NULL};

    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.hidden_paths = hidden;
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_MOUNTNS].state, SANDBOX_ACTIVE);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_MOUNTNS].detail, "2 hidden") != NULL);

    EXPECT_ERRNO(open(conn, O_RDONLY), EACCES);  /* covered by a file of mode 000 */
    EXPECT_ERRNO(open(inner, O_RDONLY), EACCES); /* the cover is mode 000 */
    EXPECT(open_read(other) > 0); /* the rest of the workspace is as it was */
    EXPECT_ERRNO(unlink(conn), EBUSY);
}

static void test_hidden_paths_are_covered(void)
{
    struct env e;
    env_init(&e);
    char path[160];
    snprintf(path, sizeof path, "%s/kernel-1234.json", e.ws);
    write_text(path, "{\"key\": \"secret\"}\n");
    snprintf(path, sizeof path, "%s/runtime", e.ws);
    REQUIRE(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/runtime/kernel-5678.json", e.ws);
    write_text(path, "{\"key\": \"secret\"}\n");
    snprintf(path, sizeof path, "%s/notes.txt", e.ws);
    write_text(path, "notes\n");
    sandboxed_run(body_hidden, &e);
    snprintf(path, sizeof path, "%s/kernel-1234.json", e.ws);
    CHECK(open_read(path) > 0); /* outside the worker, untouched */
    env_release(&e);
}

static void body_hidden_exposed(const struct env *e)
{
    char conn[128];
    snprintf(conn, sizeof conn, "%s/kernel-1234.json", e->ws);
    const char *hidden[] = {conn, NULL};
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.hidden_paths = hidden;
    sandbox_report_init(&r);
    /* Landlock alone cannot hide a file inside the workspace. Without a mount
     * namespace (a machine without user namespaces) that is a gap the report
     * states, not a reason to refuse to run; with one, which should have
     * covered it, it is a failure. */
    EXPECT_INT(
        sandbox__landlock_apply(&p, &r.layers[SANDBOX_LAYER_LANDLOCK], &r.landlock_abi),
        0);
    r.layers[SANDBOX_LAYER_MOUNTNS].state = SANDBOX_UNAVAILABLE;
    EXPECT_INT(sandbox__hidden_check(&p, &r.layers[SANDBOX_LAYER_MOUNTNS], false), 0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_MOUNTNS].state, SANDBOX_UNAVAILABLE);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_MOUNTNS].detail, "cannot be hidden") != NULL);
    r.layers[SANDBOX_LAYER_MOUNTNS].state = SANDBOX_ACTIVE;
    EXPECT_INT(sandbox__hidden_check(&p, &r.layers[SANDBOX_LAYER_MOUNTNS], true),
               -EACCES);
    EXPECT_INT(r.layers[SANDBOX_LAYER_MOUNTNS].state, SANDBOX_FAILED);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_MOUNTNS].detail, "is still readable") != NULL);
}

static void test_hidden_path_left_readable_fails(void)
{
    struct env e;
    env_init(&e);
    char path[160];
    snprintf(path, sizeof path, "%s/kernel-1234.json", e.ws);
    write_text(path, "{\"key\": \"secret\"}\n");
    sandboxed_run(body_hidden_exposed, &e);
    env_release(&e);
}

/* --- capabilities and tasks -------------------------------------------------------- */

static void body_caps(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_CAPS].state, SANDBOX_ACTIVE);
    static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < 5; i++) {
        char v[64] = "";
        EXPECT(status_field(sets[i], v, sizeof v));
        if (strcmp(v, "0000000000000000") != 0) {
            fprintf(stderr, "    %s is %s\n", sets[i], v);
            child_failures++;
        }
    }
    char nnp[16] = "";
    EXPECT(status_field("NoNewPrivs", nnp, sizeof nnp));
    EXPECT_INT(strcmp(nnp, "1"), 0);
}

static void test_capabilities_all_dropped(void)
{
    with_env(body_caps);
}

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;

static void *hold(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hold_lock);
    pthread_mutex_unlock(&hold_lock);
    return NULL;
}

static void body_tasks(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    sandbox_policy_init(&p);
    (void)e;
    /* Root is exempt from RLIMIT_NPROC everywhere; see the limit bind as another user. */
    if (getuid() == 0) {
        EXPECT_OK(setgroups(0, NULL));
        EXPECT_OK(setresgid(65534, 65534, 65534));
        EXPECT_OK(setresuid(65534, 65534, 65534));
        /* as after an execve: a uid change without one leaves /proc/self owned by root */
        EXPECT_OK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
    }
    enter_and_lock(e, &p, &r);
    EXPECT_INT(r.layers[SANDBOX_LAYER_USERNS].state, SANDBOX_ACTIVE);
    struct rlimit l;
    EXPECT_OK(getrlimit(RLIMIT_NPROC, &l));
    EXPECT_INT(l.rlim_cur, SANDBOX_MAX_TASKS);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_RLIMITS].detail, "tasks 1024") != NULL);

    /* In its own user namespace the limit counts the worker's tasks only. */
    static pthread_t threads[SANDBOX_MAX_TASKS + 64];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    pthread_mutex_lock(&hold_lock);
    int made = 0, err = 0;
    while (made < SANDBOX_MAX_TASKS + 64) {
        err = pthread_create(&threads[made], &attr, hold, NULL);
        if (err)
            break;
        made++;
    }
    pthread_mutex_unlock(&hold_lock);
    for (int i = 0; i < made; i++)
        pthread_join(threads[i], NULL);
    EXPECT_INT(err, EAGAIN);
    EXPECT_INT(made, SANDBOX_MAX_TASKS - 1); /* the main thread is the first task */
}

static void body_tasks_root(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    enter_and_lock(e, &p, &r);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_RLIMITS].detail, "root is exempt") != NULL);
    struct rlimit l;
    EXPECT_OK(getrlimit(RLIMIT_NPROC, &l));
    EXPECT(l.rlim_cur != SANDBOX_MAX_TASKS);
}

static void test_nproc_caps_the_workers_threads(void)
{
    with_env(body_tasks);
    if (getuid() == 0)
        with_env(body_tasks_root);
}

/* --- Landlock ---------------------------------------------------------------------- */

static void *thread_self_status(void *arg)
{
    *(int *)arg = open_read("/proc/thread-self/status");
    return NULL;
}

static void body_landlock(const struct env *e)
{
    char link1[128], link2[128], path[128];
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    sandbox_report_init(&r);
    /* Landlock alone: no namespaces, no filter, so each outcome is Landlock's. */
    EXPECT_INT(
        sandbox__landlock_apply(&p, &r.layers[SANDBOX_LAYER_LANDLOCK], &r.landlock_abi),
        0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_LANDLOCK].state, SANDBOX_ACTIVE);
    EXPECT(r.landlock_abi >= 1);

    EXPECT_ERRNO(open("/etc/shadow", O_RDONLY), EACCES);
    EXPECT_ERRNO(open(e->home_secret, O_RDONLY), EACCES);
    EXPECT_ERRNO(open("/root", O_RDONLY | O_DIRECTORY), EACCES);
    EXPECT_ERRNO(open("/etc/ssl/private", O_RDONLY | O_DIRECTORY), EACCES);
    EXPECT(open_read("/usr/lib/python3.11/os.py") > 0);
    EXPECT(open_read("/etc/passwd") > 0);
    EXPECT(open_read("/etc/ld.so.cache") > 0);
    EXPECT(open_read("/sys/devices/system/cpu/online") > 0);
    EXPECT_INT(create_file(e->ws, "w"), 0);
    EXPECT_INT(create_file(e->td, "w"), 0);
    EXPECT_ERRNO(create_file("/tmp", "sandpit-escaped"), EACCES);
    EXPECT_ERRNO(open(e->outside, O_RDONLY), EACCES);
    EXPECT_ERRNO(open(e->outside, O_WRONLY | O_TRUNC), EACCES);
    EXPECT_ERRNO(truncate(e->outside, 0), EACCES);
    EXPECT_ERRNO(unlink(e->outside), EACCES);
    snprintf(path, sizeof path, "%s/renamed", e->ws);
    EXPECT_ERRNO(rename(e->outside, path), EACCES);
    EXPECT_ERRNO(link(e->outside, path), EXDEV); /* no REFER from /tmp */

    /* A symlink made in the workspace is followed to its target, which is checked. */
    snprintf(link1, sizeof link1, "%s/shadow", e->ws);
    snprintf(link2, sizeof link2, "%s/secret", e->ws);
    EXPECT_OK(symlink("/etc/shadow", link1));
    EXPECT_OK(symlink(e->home_secret, link2));
    EXPECT_ERRNO(open(link1, O_RDONLY), EACCES);
    EXPECT_ERRNO(open(link2, O_RDONLY), EACCES);

    /* /proc/self is /proc/<this pid>, threads included; others' entries are not. */
    EXPECT(open_read("/proc/self/status") > 0);
    EXPECT(open_read("/proc/self/maps") > 0);
    int from_thread = -2;
    pthread_t t;
    EXPECT_INT(pthread_create(&t, NULL, thread_self_status, &from_thread), 0);
    pthread_join(t, NULL);
    EXPECT(from_thread > 0);
    snprintf(path, sizeof path, "/proc/%d/status", (int)getppid());
    EXPECT_ERRNO(open(path, O_RDONLY), EACCES);
    EXPECT_ERRNO(open("/proc/1/cmdline", O_RDONLY), EACCES);
    /* machine-wide counters are readable (psutil, numpy), other /proc files not */
    EXPECT(open_read("/proc/stat") > 0);
    EXPECT(open_read("/proc/cpuinfo") > 0);
    EXPECT_ERRNO(open("/proc/kallsyms", O_RDONLY), EACCES);
    EXPECT_ERRNO(open("/proc/sys/kernel/hostname", O_RDONLY), EACCES);
    EXPECT_ERRNO(open("/proc/self/root/etc/shadow", O_RDONLY), EACCES);

    int fd = open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC);
    EXPECT(fd >= 0);
    close(fd);
    EXPECT(open_read("/dev/urandom") > 0);
    EXPECT_ERRNO(open("/dev/urandom", O_WRONLY), EACCES);
    EXPECT_ERRNO(open("/dev/kmsg", O_RDONLY), EACCES);
    EXPECT_ERRNO(open("/dev/ptmx", O_RDWR), EACCES);

    if (r.landlock_abi >= 4)
        EXPECT_ERRNO(connect_port(e->port), EACCES); /* TCP connect is handled */
    if (r.landlock_abi >= 6)
        EXPECT_ERRNO(kill(getppid(), 0), EPERM); /* signals are scoped */
    EXPECT_OK(kill(getpid(), 0));
}

static void test_landlock_files_network_signals(void)
{
    with_env(body_landlock);
}

static void body_landlock_proc_self_child(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    sandbox_report_init(&r);
    EXPECT_INT(
        sandbox__landlock_apply(&p, &r.layers[SANDBOX_LAYER_LANDLOCK], &r.landlock_abi),
        0);
    EXPECT(open_read("/proc/self/status") > 0);
    /* The rule was made on /proc/<this pid>: a child's /proc/self is another folder. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(open_read("/proc/self/status") < 0 && errno == EACCES ? 0 : 1);
    int status = -1; /* not an exit, if waitpid fails */
    EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_landlock_proc_self_is_this_process_only(void)
{
    with_env(body_landlock_proc_self_child);
}

static void test_landlock_skips_missing_policy_paths(void)
{
    struct env e;
    env_init(&e);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const char *ro[] = {"/nonexistent/ro", "/usr/share", NULL};
        const char *rw[] = {"/nonexistent/rw", NULL};
        struct sandbox_policy p;
        struct sandbox_report r;
        policy_for(&e, &p);
        p.ro_paths = ro;
        p.rw_paths = rw;
        sandbox_report_init(&r);
        child_failures = 0;
        EXPECT_INT(sandbox_enter(&p, &r), 0);
        const struct sandbox_layer *l = &r.layers[SANDBOX_LAYER_LANDLOCK];
        EXPECT_INT(l->state, SANDBOX_ACTIVE);
        EXPECT(strstr(l->detail, "skipped /nonexistent/ro") != NULL);
        EXPECT(strstr(l->detail, "skipped /nonexistent/rw") != NULL);
        EXPECT(strstr(l->detail, "(+1)") != NULL);
        EXPECT(open_read("/etc/shadow") < 0);
        EXPECT_INT(create_file(e.ws, "x"), 0);
        _exit(child_failures ? 1 : 0);
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    env_release(&e);
}

/* --- seccomp ----------------------------------------------------------------------- */

static void lock_only(const struct env *e, bool network)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.network = network;
    sandbox_report_init(&r);
    /* The filter alone: no Landlock or namespaces, so each denial is the filter's. */
    EXPECT_INT(sandbox_lock(&p, &r), 0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_SECCOMP].state, SANDBOX_ACTIVE);
    for (size_t i = 0; i < SANDBOX_LAYER_SECCOMP; i++)
        EXPECT_INT(r.layers[i].state, SANDBOX_PENDING);
}

static void body_seccomp_processes(const struct env *e)
{
    lock_only(e, false);
    EXPECT_ERRNO(try_execve(), EPERM);
    char *argv[] = {"true", NULL};
    EXPECT_ERRNO(syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, environ, 0), EPERM);
    EXPECT_ERRNO(fork(), EPERM);
    EXPECT_ERRNO(syscall(SYS_fork), EPERM);
    long v = syscall(SYS_vfork);
    if (v == 0)
        _exit(0); /* only if the filter failed; do not run on in a vfork child */
    EXPECT_INT(v, -1);
    EXPECT_INT(errno, EPERM);
    EXPECT_ERRNO(syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0), EPERM);
    EXPECT_ERRNO(
        syscall(SYS_clone, (unsigned long)(CLONE_VM | CLONE_VFORK | SIGCHLD), 0, 0, 0, 0),
        EPERM);
    /* clone3: ENOSYS, so glibc falls back to clone; threads still work */
    char args[88] = {0};
    EXPECT_ERRNO(syscall(SYS_clone3, args, sizeof args), ENOSYS);
    EXPECT(thread_runs());
    EXPECT(thread_runs());
    pid_t pid;
    EXPECT_INT(posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ), EPERM);
    EXPECT(system("true") != 0);
}

static void test_seccomp_no_new_processes_but_threads(void)
{
    with_env(body_seccomp_processes);
}

static void body_seccomp_sockets(const struct env *e)
{
    lock_only(e, false);
    static const int families[] = {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK, AF_PACKET};
    for (size_t i = 0; i < 5; i++) {
        EXPECT_ERRNO(socket(families[i], SOCK_STREAM, 0), EPERM);
        EXPECT_ERRNO(socket(families[i], SOCK_DGRAM, 0), EPERM);
    }
    expect_stream_pairs_only(false);
    EXPECT_ERRNO(connect_port(e->port), EPERM);
}

static void test_seccomp_no_sockets(void)
{
    with_env(body_seccomp_sockets);
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static void body_seccomp_signals(const struct env *e)
{
    lock_only(e, false);
    EXPECT_ERRNO(kill(getppid(), 0), EPERM);
    EXPECT_ERRNO(kill(getppid(), SIGKILL), EPERM);
    EXPECT_ERRNO(kill(0, 0), EPERM);  /* the process group */
    EXPECT_ERRNO(kill(-1, 0), EPERM); /* everything */
    EXPECT_ERRNO(syscall(SYS_tgkill, getppid(), getppid(), 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_tkill, getppid(), 0), EPERM);
    EXPECT_OK(kill(getpid(), 0));
    EXPECT_OK(syscall(SYS_tgkill, getpid(), gettid(), 0));
    signal(SIGUSR1, on_usr1);
    EXPECT_OK(raise(SIGUSR1));
    EXPECT(got_usr1);
    got_usr1 = 0;
    EXPECT_INT(pthread_kill(pthread_self(), SIGUSR1), 0);
    EXPECT(got_usr1);
    EXPECT_ERRNO(syscall(SYS_pidfd_open, getppid(), 0), EPERM);
}

static void test_seccomp_signals_only_to_itself(void)
{
    with_env(body_seccomp_signals);
}

static void body_seccomp_privileged(const struct env *e)
{
    lock_only(e, false);
    EXPECT_ERRNO(ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
    EXPECT_ERRNO(ptrace(PTRACE_ATTACH, getppid(), NULL, NULL), EPERM);
    EXPECT_ERRNO(setuid(0), EPERM);
    EXPECT_ERRNO(setgid(0), EPERM);
    EXPECT_ERRNO(setresuid(0, 0, 0), EPERM);
    EXPECT_ERRNO(setgroups(0, NULL), EPERM);
    EXPECT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
    EXPECT_ERRNO(unshare(CLONE_NEWNS), EPERM);
    EXPECT_ERRNO(setns(0, 0), EPERM);
    EXPECT_ERRNO(mount("none", "/mnt", "tmpfs", 0, NULL), EPERM);
    EXPECT_ERRNO(umount2("/proc", MNT_DETACH), EPERM);
    EXPECT_ERRNO(chroot("/"), EPERM);
    EXPECT_ERRNO(syscall(SYS_init_module, NULL, 0, ""), EPERM);
    EXPECT_ERRNO(syscall(SYS_finit_module, 0, "", 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_io_uring_setup, 1, NULL), EPERM);
    EXPECT_ERRNO(syscall(SYS_userfaultfd, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_memfd_create, "x", 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_reboot, 0, 0, 0, NULL), EPERM);
    EXPECT_ERRNO(syscall(SYS_seccomp, 0, 0, NULL), EPERM);
    EXPECT_ERRNO(syscall(SYS_landlock_create_ruleset, NULL, 0, 1), EPERM);
    EXPECT_ERRNO(syscall(SYS_open_by_handle_at, 0, NULL, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_iopl, 3), EPERM);
    EXPECT_ERRNO(syscall(SYS_syslog, 3, NULL, 0), EPERM);
    struct timeval tv = {0, 0};
    EXPECT_ERRNO(settimeofday(&tv, NULL), EPERM);
    EXPECT_ERRNO(setsid(), EPERM);
    EXPECT_ERRNO(setpgid(0, 0), EPERM);

    /* personality: the query only */
    EXPECT(syscall(SYS_personality, 0xffffffffUL) != -1);
    EXPECT_ERRNO(syscall(SYS_personality, 0x0040000UL /* ADDR_NO_RANDOMIZE */), EPERM);

    /* prctl: the allowlist, with the option's high half checked too */
    EXPECT_OK(prctl(PR_SET_NAME, "sandpit-test", 0, 0, 0));
    char name[16] = "";
    EXPECT_OK(prctl(PR_GET_NAME, name, 0, 0, 0));
    EXPECT_INT(strcmp(name, "sandpit-test"), 0);
    EXPECT_INT(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 2);
    EXPECT_INT(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
    EXPECT_ERRNO(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), EPERM);
    EXPECT_ERRNO(prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0), EPERM);
    EXPECT_ERRNO(prctl(PR_SET_PTRACER, -1, 0, 0, 0), EPERM);
    EXPECT_ERRNO(prctl(PR_CAPBSET_DROP, 0, 0, 0, 0), EPERM);
    EXPECT_ERRNO(syscall(SYS_prctl, (1UL << 32) | PR_SET_NAME, "x", 0, 0, 0), EPERM);

    /* TIOCSTI, also with junk in the unused high half of the request */
    char c = 'x';
    EXPECT_ERRNO(ioctl(0, TIOCSTI, &c), EPERM);
    EXPECT_ERRNO(syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c), EPERM);
    EXPECT_ERRNO(ioctl(0, TIOCLINUX, &c), EPERM);

    /* calls that take a pid: the caller only */
    struct rlimit l;
    EXPECT_OK(prlimit(0, RLIMIT_NOFILE, NULL, &l));
    EXPECT_ERRNO(prlimit(getppid(), RLIMIT_NOFILE, NULL, &l), EPERM);
    EXPECT_OK(setpriority(PRIO_PROCESS, 0, 1));
    EXPECT_ERRNO(setpriority(PRIO_PROCESS, (id_t)getppid(), 19), EPERM);
    EXPECT_ERRNO(setpriority(PRIO_PGRP, 0, 19), EPERM);
    EXPECT_ERRNO(setpriority(PRIO_USER, 0, 19), EPERM);
    struct sched_param sp = {0};
    EXPECT_ERRNO(sched_setscheduler(getppid(), SCHED_IDLE, &sp), EPERM);

    /* syscalls newer than the reviewed table: ENOSYS, as on an older kernel */
    EXPECT_ERRNO(syscall(451 /* cachestat */, 0, NULL, NULL, 0), ENOSYS);
    EXPECT_ERRNO(syscall(458 /* listmount */, NULL, NULL, 0, 0), ENOSYS);
    EXPECT_ERRNO(syscall(1000), ENOSYS);
}

static void test_seccomp_denies_privileged_calls(void)
{
    with_env(body_seccomp_privileged);
}

#if defined(__x86_64__)
/* getpid through the i386 table (number 20): only reachable with int $0x80. */
static long int80_getpid(void)
{
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(20L)
                     : "memory", "r8", "r9", "r10", "r11");
    return ret;
}

/* Runs fn in a grandchild, after the filter if filtered; returns its wait status. The
 * grandchild exits 0 if the call returned this process's pid, 1 if it returned anything
 * else, and dies of a signal if the kernel or the filter killed it. */
static int other_abi_status(int which, bool filtered, const struct env *e)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* A fault must end the process as it does in any build: AddressSanitizer's
         * handler would turn it into exit status 1. */
        signal(SIGSEGV, SIG_DFL);
        if (filtered) {
            struct sandbox_policy p;
            struct sandbox_report r;
            policy_for(e, &p);
            sandbox_report_init(&r);
            if (sandbox_lock(&p, &r) != 0)
                _exit(2);
        }
        long got = which == 0 ? int80_getpid() : syscall(0x40000000L | SYS_getpid);
        _exit(got == getpid() ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void body_other_abis(const struct env *e)
{
    /* i386: with IA32 emulation, getpid works unfiltered and the filter kills the
     * process with SIGSYS. A kernel without IA32 emulation faults on int $0x80 (SIGSEGV)
     * before any filter sees the call, so there the filter cannot be told from the
     * kernel: assert only what holds on both, that the call cannot succeed. */
    int plain = other_abi_status(0, false, e);
    int filtered = other_abi_status(0, true, e);
    bool ia32 = WIFEXITED(plain) && WEXITSTATUS(plain) == 0;
    if (ia32) {
        EXPECT(WIFSIGNALED(filtered) && WTERMSIG(filtered) == SIGSYS);
    } else {
        EXPECT(WIFSIGNALED(plain) && WTERMSIG(plain) == SIGSEGV);
        EXPECT(WIFSIGNALED(filtered));
    }

    /* x32: same architecture token, told apart by the number's high bit. */
    plain = other_abi_status(1, false, e);
    filtered = other_abi_status(1, true, e);
    EXPECT(WIFEXITED(plain)); /* ENOSYS (no x32 in this kernel) or the pid */
    EXPECT(WIFSIGNALED(filtered) && WTERMSIG(filtered) == SIGSYS);
    if (!ia32)
        testing_skip("this kernel has no IA32 emulation (int $0x80 faults unfiltered): "
                     "the i386 half checked only that the call fails, not that the "
                     "filter kills it");
}

static void test_seccomp_kills_other_abis(void)
{
    with_env(body_other_abis);
}
#endif

/* --- cgroup ------------------------------------------------------------------------- */

static const char self_v1[] = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/cc25\n"
                              "2:cpu,cpuacct:/a/b\n0::/\n";
static const char mounts_v1[] =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char self_v2[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
static const char mounts_v2[] =
    "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
/* A container that sees only its part of the v1 memory hierarchy. */
static const char self_ct[] = "4:memory:/docker/abc/inner\n";
static const char mounts_ct[] =
    "50 40 0:31 /docker/abc /sys/fs/cgroup/memory ro - cgroup "
    "cgroup rw,memory\n";

static void test_cgroup_locate(void)
{
    char dir[256];
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 1, "memory", dir, sizeof dir),
              0);
    CHECK_STR(dir, "/sys/fs/cgroup/memory/process_api/cc25");
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 1, "pids", dir, sizeof dir), 0);
    CHECK_STR(dir, "/sys/fs/cgroup/pids");
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 1, "cpu", dir, sizeof dir), 0);
    CHECK_STR(dir, "/sys/fs/cgroup/cpu,cpuacct/a/b");
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 1, "cpuset", dir, sizeof dir),
              -ENOENT);
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 2, NULL, dir, sizeof dir), 0);
    CHECK_STR(dir, "/sys/fs/cgroup/unified");
    CHECK_INT(sandbox__cgroup_locate(self_v2, mounts_v2, 2, NULL, dir, sizeof dir), 0);
    CHECK_STR(dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
    CHECK_INT(sandbox__cgroup_locate(self_v2, mounts_v2, 1, "memory", dir, sizeof dir),
              -ENOENT);
    CHECK_INT(sandbox__cgroup_locate(self_ct, mounts_ct, 1, "memory", dir, sizeof dir),
              0);
    CHECK_STR(dir, "/sys/fs/cgroup/memory/inner");
    /* a mount of another part of the hierarchy does not show ours */
    CHECK_INT(sandbox__cgroup_locate("4:memory:/elsewhere\n", mounts_ct, 1, "memory", dir,
                                     sizeof dir),
              -ENOENT);
    CHECK_INT(sandbox__cgroup_locate(self_v1, mounts_v1, 1, "memory", dir, 10),
              -ENAMETOOLONG);
    CHECK_INT(sandbox__cgroup_locate("", "", 2, NULL, dir, sizeof dir), -ENOENT);
    CHECK_INT(sandbox_cgroup_memory_limit(0), 0);
    CHECK_INT(sandbox_cgroup_memory_limit(256ull << 20), 320ull << 20);
    CHECK_INT(sandbox_cgroup_memory_limit(2ull << 30), (2ull << 30) + (256ull << 20));
}

/* The supervisor's part and the worker's, in one test: a group is made, a child joins
 * it and reports it, and it is gone once the child has ended. */
static void test_cgroup_for_a_worker(void)
{
    struct sandbox_cgroup cg;
    struct sandbox_cgroup_limits lim = {256ull << 20, 64, 0.5};
    if (sandbox_cgroup_create(&cg, 7, &lim) < 0) {
        CHECK(cg.detail[0] != 0);
        CHECK(cg.version == 0 && cg.dirs[0] == NULL);
        struct sandbox_policy p;
        struct sandbox_layer l = {"cgroup", SANDBOX_PENDING, ""};
        bool counted = true;
        sandbox_policy_init(&p);
        p.memory_bytes = 256ull << 20;
        p.cgroup_note = cg.detail;
        CHECK_INT(sandbox__cgroup_check(&p, &l, &counted), 0);
        CHECK(!counted && l.state == SANDBOX_UNAVAILABLE);
        CHECK(strstr(l.detail, "covers private memory only") != NULL);
        testing_skip("no cgroup on this machine (%s): only the report is checked",
                     cg.detail);
    }
    CHECK(strstr(cg.detail, "sandpit-") != NULL);
    char mem_dir[4096];
    snprintf(mem_dir, sizeof mem_dir, "%s", cg.dirs[SANDBOX_CGROUP_MEMORY]);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int rc = sandbox_cgroup_join(&cg);
        struct sandbox_policy p;
        struct sandbox_layer l = {"cgroup", SANDBOX_PENDING, ""};
        bool counted = false;
        sandbox_policy_init(&p);
        p.memory_bytes = 256ull << 20;
        sandbox__cgroup_check(&p, &l, &counted);
        fprintf(stderr, "    child: %s %s\n", sandbox_state_name(l.state), l.detail);
        bool ok = rc == 0 &&
                  l.state == (UNDER_ASAN ? SANDBOX_UNAVAILABLE : SANDBOX_ACTIVE) &&
                  strstr(l.detail, "tasks 64") != NULL &&
                  (UNDER_ASAN || (counted && strstr(l.detail, "memory 320 MiB")));
        _exit(ok ? 0 : 1);
    }
    sandbox_cgroup_started(&cg, pid);
    CHECK(cg.procs[0] == -1);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!sandbox_cgroup_memory_killed(&cg));
    CHECK_INT(sandbox_cgroup_remove(&cg), 0);
    CHECK(access(mem_dir, F_OK) < 0 && errno == ENOENT);
    CHECK(cg.version == 0 && cg.dirs[0] == NULL);
    sandbox_cgroup_release(&cg);
}

/* --- both stages ------------------------------------------------------------------- */

static void body_full(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.memory_bytes = UNDER_ASAN ? 0 : 1ull << 30;
    p.max_file_bytes = 16 << 20;
    enter_and_lock(e, &p, &r);
    /* The cgroup is the supervisor's to make (test_cgroup_for_a_worker); a test
     * process is in none of its own. */
    for (size_t i = SANDBOX_LAYER_RLIMITS; i < r.n; i++)
        if (r.layers[i].state != SANDBOX_ACTIVE) {
            fprintf(stderr, "    expected every layer active on this machine:\n");
            sandbox_report_print(&r, stderr);
            child_failures++;
            break;
        }

    EXPECT_ERRNO(try_execve(), EPERM);
    EXPECT_ERRNO(fork(), EPERM);
    EXPECT(thread_runs());
    char args[88] = {0};
    EXPECT_ERRNO(syscall(SYS_clone3, args, sizeof args), ENOSYS);
    EXPECT_ERRNO(socket(AF_INET, SOCK_STREAM, 0), EPERM);
    EXPECT_ERRNO(socket(AF_UNIX, SOCK_STREAM, 0), EPERM);
    EXPECT_ERRNO(socket(AF_NETLINK, SOCK_RAW, 0), EPERM);
    EXPECT_ERRNO(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
    EXPECT_ERRNO(kill(getppid(), 0), EPERM);
    EXPECT_OK(kill(getpid(), 0));
    EXPECT_ERRNO(open("/etc/shadow", O_RDONLY), EACCES);
    EXPECT_ERRNO(open(e->home_secret, O_RDONLY), EACCES);
    EXPECT(open_read("/usr/lib/python3.11/os.py") > 0);
    EXPECT_INT(create_file(e->ws, "cell-output.txt"), 0);
    EXPECT_INT(create_file(e->td, "scratch"), 0);
    EXPECT(create_file("/tmp", "sandpit-escaped") < 0);
    char link[128];
    snprintf(link, sizeof link, "%s/to-secret", e->ws);
    EXPECT_OK(symlink(e->home_secret, link));
    EXPECT(open_read(link) < 0);
    EXPECT_ERRNO(ptrace(PTRACE_ATTACH, getppid(), NULL, NULL), EPERM);
    EXPECT_ERRNO(setuid(0), EPERM);
    EXPECT_ERRNO(unshare(CLONE_NEWNET), EPERM);
    EXPECT_ERRNO(mount("none", "/mnt", "tmpfs", 0, NULL), EPERM);
    EXPECT_ERRNO(syscall(SYS_init_module, NULL, 0, ""), EPERM);
    EXPECT_ERRNO(chmod(e->outside, 04777), EROFS);
}

static void test_full_sandbox(void)
{
    with_env(body_full);
    struct stat st;
    CHECK(stat("/tmp/sandpit-escaped", &st) < 0);
}

static void *idle_thread(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

static void body_threads_refused(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    pthread_t t;
    EXPECT_INT(pthread_create(&t, NULL, idle_thread, NULL), 0);
    sandbox_report_init(&r);
    EXPECT_INT(sandbox_enter(&p, &r), -EINVAL);
    for (size_t i = 0; i < SANDBOX_LAYER_SECCOMP; i++)
        EXPECT_INT(r.layers[i].state, SANDBOX_FAILED);
    EXPECT(strstr(r.layers[SANDBOX_LAYER_LANDLOCK].detail, "2 threads") != NULL);
    /* nothing was applied */
    EXPECT(open_read("/usr/lib/python3.11/os.py") > 0);
    if (getuid() == 0)
        EXPECT(open_read("/etc/shadow") > 0);
    EXPECT_OK(connect_port(e->port));
}

static void test_enter_refuses_a_threaded_process(void)
{
    with_env(body_threads_refused);
}

/* --- the report's honesty ------------------------------------------------------------
 */

/* Whatever the probe claims active must hold in a worker given the same policy. */
static void body_probe_honest(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report probed, r;
    policy_for(e, &p);
    EXPECT_INT(sandbox_probe(&p, &probed), 0);
    EXPECT_INT(probed.n, 8);
    /* the probe ran in a child: this process is untouched */
    EXPECT_INT(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
    EXPECT(thread_runs());

    sandbox_report_init(&r);
    EXPECT_INT(sandbox_enter(&p, &r), 0);
    /* The probe's child was in a group made for it, as a worker is; this process is
     * not, and says so. */
    EXPECT(r.layers[SANDBOX_LAYER_CGROUP].state == SANDBOX_UNAVAILABLE);
    for (size_t i = SANDBOX_LAYER_RLIMITS; i < SANDBOX_LAYER_SECCOMP; i++)
        EXPECT_INT(r.layers[i].state, probed.layers[i].state);
    if (probed.layers[SANDBOX_LAYER_NETNS].state == SANDBOX_ACTIVE) {
        struct if_nameindex *ifs = if_nameindex();
        EXPECT(ifs && ifs[0].if_index && !ifs[1].if_index);
        if (ifs)
            if_freenameindex(ifs);
    }
    if (probed.layers[SANDBOX_LAYER_LANDLOCK].state == SANDBOX_ACTIVE)
        EXPECT_ERRNO(open(e->home_secret, O_RDONLY), EACCES);
    if (probed.layers[SANDBOX_LAYER_MOUNTNS].state == SANDBOX_ACTIVE)
        EXPECT_ERRNO(chmod(e->outside, 0777), EROFS);
    if (probed.layers[SANDBOX_LAYER_CAPS].state == SANDBOX_ACTIVE) {
        char v[64] = "";
        EXPECT(status_field("CapEff", v, sizeof v) && strcmp(v, "0000000000000000") == 0);
    }
    EXPECT_INT(sandbox_lock(&p, &r), 0);
    EXPECT_INT(r.layers[SANDBOX_LAYER_SECCOMP].state,
               probed.layers[SANDBOX_LAYER_SECCOMP].state);
    if (probed.layers[SANDBOX_LAYER_SECCOMP].state == SANDBOX_ACTIVE)
        EXPECT_ERRNO(fork(), EPERM);
}

static void test_probe_claims_only_what_holds(void)
{
    with_env(body_probe_honest);
}

static void body_probe_network_on(const struct env *e)
{
    struct sandbox_policy p;
    struct sandbox_report r;
    policy_for(e, &p);
    p.network = true;
    EXPECT_INT(sandbox_probe(&p, &r), 0);
    EXPECT(r.layers[SANDBOX_LAYER_NETNS].state != SANDBOX_ACTIVE);
    EXPECT_INT(r.layers[SANDBOX_LAYER_NETNS].state, SANDBOX_DISABLED);
    p.enabled = false;
    EXPECT_INT(sandbox_probe(&p, &r), 0);
    for (size_t i = 0; i < r.n; i++)
        EXPECT_INT(r.layers[i].state, SANDBOX_DISABLED);
}

static void test_probe_network_on_and_off_claims_nothing(void)
{
    with_env(body_probe_network_on);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_policy_defaults),
    TESTING_CASE(test_report_names_and_print),
    TESTING_CASE(test_disabled_applies_nothing),
    TESTING_CASE(test_rlimits_soft_and_hard),
    TESTING_CASE(test_rlimit_fsize_gives_efbig),
    TESTING_CASE(test_rlimit_data_fails_big_malloc),
    TESTING_CASE(test_userns_maps_uid_to_itself),
    TESTING_CASE(test_the_early_trial_of_the_namespaces_is_what_stage_1_goes_by),
    TESTING_CASE(test_netns_has_only_a_down_loopback),
    TESTING_CASE(test_network_on_allows_tcp_only),
    TESTING_CASE(test_mountns_makes_the_rest_read_only),
    TESTING_CASE(test_landlock_alone_does_not_govern_chmod),
    TESTING_CASE(test_hidden_paths_are_covered),
    TESTING_CASE(test_hidden_path_left_readable_fails),
    TESTING_CASE(test_capabilities_all_dropped),
    TESTING_CASE(test_nproc_caps_the_workers_threads),
    TESTING_CASE(test_landlock_files_network_signals),
    TESTING_CASE(test_landlock_proc_self_is_this_process_only),
    TESTING_CASE(test_landlock_skips_missing_policy_paths),
    TESTING_CASE(test_seccomp_no_new_processes_but_threads),
    TESTING_CASE(test_seccomp_no_sockets),
    TESTING_CASE(test_seccomp_signals_only_to_itself),
    TESTING_CASE(test_seccomp_denies_privileged_calls),
#if defined(__x86_64__)
    TESTING_CASE(test_seccomp_kills_other_abis),
#endif
    TESTING_CASE(test_full_sandbox),
    TESTING_CASE(test_cgroup_locate),
    TESTING_CASE(test_cgroup_for_a_worker),
    TESTING_CASE(test_enter_refuses_a_threaded_process),
    TESTING_CASE(test_probe_claims_only_what_holds),
    TESTING_CASE(test_probe_network_on_and_off_claims_nothing),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
