/* launch: the kernel's process, from fork to reaping.
 *
 * The hard parts are all about processes. A detached kernel must outlive the
 * shell and the `sandpit start` that launched it, and not be killed by the
 * terminal's hang-up: it is forked twice with a new session in between, so
 * that init (or a subreaper) becomes its parent; the pid comes back through a
 * pipe. An exec that fails must be reported, not mistaken for a kernel that
 * is slow to answer: a close-on-exec pipe carries the child's errno and reads
 * empty once exec has happened. The fork may happen while ZeroMQ's threads
 * run (a restart), so between fork and exec the child uses only calls that
 * are safe there, with its environment prepared before the fork. And a
 * kernel's exit is watched through a pidfd, which becomes readable when the
 * process ends whoever its parent is. */
#include "kernel/client/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/util/monotime.h"
#include "protocol/errbuf.h"

#define EXIT_GRACE_S 5.0 /* a kernel's time to exit on request, as jupyter_client's */

extern char **environ;

static void free_argv(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

static char **copy_argv(char *const *argv)
{
    size_t n = 0;
    while (argv && argv[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    for (size_t i = 0; copy && i < n; i++)
        if (!(copy[i] = strdup(argv[i]))) {
            free_argv(copy);
            return NULL;
        }
    return copy;
}

void launch_init(struct launched *k)
{
    memset(k, 0, sizeof *k);
    k->pidfd = -1;
}

void launch_release(struct launched *k)
{
    if (k->pidfd >= 0)
        close(k->pidfd);
    free_argv(k->argv);
    free(k->log_path);
    launch_init(k);
}

int launch_self(char *buf, size_t len)
{
    static const char serve[] = "/sandpit-serve";
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -errno;
    buf[n] = 0;
    size_t ns = sizeof serve - 1;
    if ((size_t)n > ns && strcmp(buf + n - ns, serve) == 0)
        buf[n - (ssize_t)strlen("-serve")] = 0;
    return 0;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

/* Whether the variable entry "NAME=value" is named in extra's entries. */
static bool env_named(const char *entry, char *const *extra)
{
    size_t n = strcspn(entry, "=");
    for (size_t i = 0; extra && extra[i]; i++)
        if (strncmp(extra[i], entry, n) == 0 && extra[i][n] == '=')
            return true;
    return false;
}

/* The environment the kernel gets: ours, with JPY_PARENT_PID set to parent
 * (a kernel exits when that process dies) or removed (0), and the entries of
 * extra (may be NULL) in place of ours of the same names. New array. */
static char **kernel_environment(pid_t parent, char *const *extra)
{
    size_t n = 0, nextra = 0;
    while (environ[n])
        n++;
    while (extra && extra[nextra])
        nextra++;
    char **env = calloc(n + nextra + 2, sizeof *env);
    size_t k = 0;
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "JPY_PARENT_PID=", 15) != 0 &&
            !env_named(environ[i], extra))
            env[k++] = environ[i];
    for (size_t i = 0; i < nextra; i++)
        env[k++] = extra[i];
    if (parent > 0) {
        static char jpy[48];
        snprintf(jpy, sizeof jpy, "JPY_PARENT_PID=%d", (int)parent);
        env[k++] = jpy;
    }
    env[k] = NULL;
    return env;
}

/* In the child, between fork and exec: only async-signal-safe calls. The
 * kernel starts in its --workspace, where its cells then run, whatever folder
 * the command was given in (a kernel started inside its workspace runs in that
 * folder: the notebook's, for a client that starts one per notebook). */
static _Noreturn void exec_kernel(char **argv, char **env, int in_fd, int out_fd,
                                  int log_fd, int err_fd)
{
    static const char opt[] = "--workspace";
    for (size_t i = 1; argv[i] && argv[i + 1]; i++) {
        size_t n = 0; /* strcmp by hand: it is not on the async-signal-safe list */
        while (n < sizeof opt && argv[i][n] == opt[n])
            n++;
        if (n == sizeof opt && chdir(argv[i + 1]) == 0)
            break;
    }
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    if (log_fd >= 0)
        dup2(log_fd, 2);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
#endif
    execve(argv[0], argv, env);
    int e = errno;
    ssize_t w = write(err_fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The descriptors a start needs: /dev/null, the log, the pipe on which exec's
 * error comes back and, detached, the one that carries the grandchild's pid;
 * and the kernel's stdin and stdout (borrowed, not closed here), which are
 * /dev/null unless the caller gave its own (launch_start_io). */
struct start_fds {
    int null_fd, log_fd, errp[2], pidp[2];
    int in_fd, out_fd;
};

static void start_fds_close(struct start_fds *f)
{
    int *all[] = {&f->null_fd, &f->log_fd,  &f->errp[0],
                  &f->errp[1], &f->pidp[0], &f->pidp[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i] >= 0) {
            close(*all[i]);
            *all[i] = -1;
        }
}

static int start_fds_open(struct start_fds *f, const char *log_path, bool child,
                          char *err, size_t errlen)
{
    f->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (log_path &&
        (f->log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
        return errbuf_set(-errno, err, errlen, "cannot open the kernel's log %s: %s",
                          log_path, strerror(errno));
    if (f->null_fd < 0 || pipe2(f->errp, O_CLOEXEC) != 0 ||
        (!child && pipe2(f->pidp, O_CLOEXEC) != 0))
        return errbuf_set(-errno, err, errlen, "cannot start the kernel: %s",
                          strerror(errno));
    return 0;
}

/* Forks the kernel: as our child, or detached (a grandchild in a session of
 * its own, whose pid comes back on f->pidp). Its pid, or -errno with err set. */
static pid_t fork_kernel(char **argv, char **env, bool child, struct start_fds *f,
                         char *err, size_t errlen)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return errbuf_set(-errno, err, errlen, "cannot start the kernel: %s",
                          strerror(errno));
    if (pid == 0) {
        if (child) {
            /* The kernel dies with us; if we are already gone, it never starts. */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent)
                _exit(0);
            exec_kernel(argv, env, f->in_fd, f->out_fd, f->log_fd, f->errp[1]);
        }
        setsid();
        pid_t grandchild = fork();
        if (grandchild == 0)
            exec_kernel(argv, env, f->in_fd, f->out_fd, f->log_fd, f->errp[1]);
        ssize_t w = write(f->pidp[1], &grandchild, sizeof grandchild);
        (void)w;
        _exit(grandchild > 0 ? 0 : 1);
    }
    close(f->errp[1]);
    f->errp[1] = -1;
    if (child)
        return pid;
    close(f->pidp[1]);
    f->pidp[1] = -1;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (read(f->pidp[0], &pid, sizeof pid) != (ssize_t)sizeof pid || pid <= 0)
        return errbuf_set(-ECHILD, err, errlen,
                          "cannot start the kernel in the background");
    return pid;
}

int launch_start(struct launched *k, char ***argvp, bool child, const char *log_path,
                 char *err, size_t errlen)
{
    return launch_start_env(k, argvp, child, log_path, NULL, err, errlen);
}

/* launch_start_env, with the kernel's stdin and stdout on in_fd and out_fd
 * (-1: /dev/null). */
static int start_with(struct launched *k, char ***argvp, bool child, const char *log_path,
                      char *const *extra_env, int in_fd, int out_fd, char *err,
                      size_t errlen)
{
    char **argv = *argvp;
    *argvp = NULL;
    struct start_fds f = {-1, -1, {-1, -1}, {-1, -1}, -1, -1};
    int rc = 0;
    char **env = kernel_environment(child ? getpid() : 0, extra_env);
    if (k->pidfd >= 0)
        close(k->pidfd);
    k->pidfd = -1;
    k->pid = 0;
    k->child = child;
    if (!argv || !argv[0] || !env) {
        rc = -ENOMEM;
        goto out;
    }
    free(k->log_path);
    k->log_path = log_path ? strdup(log_path) : NULL;
    pid_t pid = 0;
    if ((rc = start_fds_open(&f, log_path, child, err, errlen)) == 0) {
        f.in_fd = in_fd >= 0 ? in_fd : f.null_fd;
        f.out_fd = out_fd >= 0 ? out_fd : f.null_fd;
    }
    if (rc || (pid = fork_kernel(argv, env, child, &f, err, errlen)) < 0) {
        rc = rc ? rc : pid;
        goto out;
    }
    k->pid = pid;
    k->pidfd = open_pidfd(pid);
    int e = 0;
    ssize_t r;
    while ((r = read(f.errp[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    if (r == (ssize_t)sizeof e) {
        rc = errbuf_set(-e, err, errlen, "cannot run %s: %s", argv[0], strerror(e));
        if (child)
            waitpid(pid, NULL, 0);
        goto out;
    }
    k->argv = argv;
    argv = NULL;
out:
    free_argv(argv);
    free(env);
    start_fds_close(&f);
    return rc;
}

int launch_start_env(struct launched *k, char ***argvp, bool child, const char *log_path,
                     char *const *extra_env, char *err, size_t errlen)
{
    return start_with(k, argvp, child, log_path, extra_env, -1, -1, err, errlen);
}

int launch_start_io(struct launched *k, char ***argvp, int in_fd, int out_fd,
                    const char *log_path, char *const *extra_env, char *err,
                    size_t errlen)
{
    return start_with(k, argvp, true, log_path, extra_env, in_fd, out_fd, err, errlen);
}

int launch_attach(struct launched *k, pid_t pid, char *const *argv, const char *log_path)
{
    launch_release(k);
    k->pid = pid;
    k->child = false;
    k->pidfd = open_pidfd(pid);
    if (argv && !(k->argv = copy_argv(argv)))
        return -ENOMEM;
    if (log_path && !(k->log_path = strdup(log_path)))
        return -ENOMEM;
    return 0;
}

bool launch_exited(struct launched *k)
{
    if (k->pid <= 0)
        return true;
    bool gone;
    if (k->pidfd >= 0) {
        struct pollfd p = {.fd = k->pidfd, .events = POLLIN};
        gone = poll(&p, 1, 0) > 0;
    } else if (k->child) {
        return waitpid(k->pid, NULL, WNOHANG) == k->pid || errno == ECHILD;
    } else {
        gone = kill(k->pid, 0) != 0 && errno == ESRCH;
    }
    if (gone && k->child)
        waitpid(k->pid, NULL, WNOHANG);
    return gone;
}

/* Waits up to timeout_s for the kernel to exit. True once it has. */
static bool wait_exit(struct launched *k, double timeout_s)
{
    double deadline = monotime_now() + timeout_s;
    while (!launch_exited(k)) {
        double left = deadline - monotime_now();
        if (left <= 0)
            return false;
        if (k->pidfd >= 0) {
            struct pollfd p = {.fd = k->pidfd, .events = POLLIN};
            poll(&p, 1, (int)(left * 1000) + 1);
        } else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

static int on_exit_fd(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    return -ECHILD;
}

int launch_wait_ready(struct launched *k, struct client *c, double timeout_s,
                      struct msg **info, char *err, size_t errlen)
{
    if (info)
        *info = NULL;
    double start = monotime_now();
    struct client_wait w = {.fds = &k->pidfd,
                            .nfds = k->pidfd >= 0,
                            .on_fd = on_exit_fd,
                            .timeout_s = timeout_s};
    struct msg *reply = NULL, *ki = NULL;
    int rc = client_ready(c, &w, &ki);
    if (!rc) {
        /* kernel_info is answered by the supervisor alone: an empty silent
         * cell proves that a worker runs. */
        char id[CLIENT_ID_LEN];
        w.timeout_s = timeout_s - (monotime_now() - start);
        if (w.timeout_s <= 0)
            rc = -ETIMEDOUT;
        else if (!(rc = client_execute_quiet(
                       c, "", CLIENT_EXEC_SILENT | CLIENT_EXEC_KEEP_GOING, id)))
            rc = client_wait(c, CONNECTION_SHELL, id, &w, &reply);
        msg_free(reply);
    }
    if (rc == -ECHILD || (rc && launch_exited(k)))
        rc = errbuf_set(-ECHILD, err, errlen, "the kernel exited while starting");
    else if (rc == -ETIMEDOUT)
        errbuf_set(rc, err, errlen, "the kernel did not answer within %.0f s", timeout_s);
    else if (rc)
        errbuf_set(rc, err, errlen, "the kernel did not answer: %s", strerror(-rc));
    if (!rc && info)
        *info = ki;
    else
        msg_free(ki);
    return rc;
}

static int on_exit_done(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    return 1;
}

int launch_restart(struct launched *k, struct client *c, double timeout_s, char *err,
                   size_t errlen)
{
    /* Only a sandpit kernel knows in_place; any other exits on this request
     * (ipykernel even answers a few requests on its way out, so answering is
     * no sign of staying). */
    struct client_wait ready = {.fds = &k->pidfd,
                                .nfds = k->pidfd >= 0,
                                .on_fd = on_exit_fd,
                                .timeout_s = timeout_s};
    struct msg *info = NULL;
    int rc = client_ready(c, &ready, &info);
    bool in_place = rc == 0 && json_is_object(json_object_get(info->content, "sandpit"));
    msg_free(info);
    if (rc && rc != -ECHILD)
        return errbuf_set(rc, err, errlen, "the kernel does not answer: %s",
                          strerror(-rc));
    json_t *content = json_pack("{s:b}", "restart", 1);
    json_t *meta = json_pack("{s:{s:b}}", "sandpit", "in_place", 1);
    char id[CLIENT_ID_LEN];
    rc = client_send(c, CONNECTION_CONTROL, "shutdown_request", &content, &meta, id);
    if (rc)
        return errbuf_set(rc, err, errlen, "cannot send the restart request: %s",
                          strerror(-rc));
    struct client_wait w = {.fds = &k->pidfd,
                            .nfds = k->pidfd >= 0,
                            .on_fd = on_exit_done,
                            .timeout_s = timeout_s,
                            .skip_idle = true};
    struct msg *reply = NULL;
    rc = client_wait(c, CONNECTION_CONTROL, id, &w, &reply);
    msg_free(reply);
    if (rc < 0 && rc != -EHOSTDOWN)
        return errbuf_set(rc, err, errlen, "the kernel did not answer the restart: %s",
                          strerror(-rc));
    /* In place, the kernel answers again once its new worker runs (and if it
     * exits instead, the pidfd says so); a kernel that follows the spec exits,
     * and is given as long as jupyter_client gives it before it is ended. */
    if (rc == 0 && in_place && !launch_exited(k)) {
        rc = launch_wait_ready(k, c, timeout_s, NULL, err, errlen);
        if (rc != -ECHILD)
            return rc;
    }
    if (!k->argv)
        return errbuf_set(-ECHILD, err, errlen,
                          "the kernel does not restart in place, and was not started by "
                          "this command: start it again the way it was started");
    if (!wait_exit(k, EXIT_GRACE_S)) {
        kill(k->pid, SIGTERM);
        if (!wait_exit(k, 3)) {
            kill(k->pid, SIGKILL);
            if (!wait_exit(k, 5))
                return errbuf_set(-ETIMEDOUT, err, errlen, "the kernel did not exit");
        }
    }
    char **argv = copy_argv(k->argv);
    char *log = k->log_path ? strdup(k->log_path) : NULL;
    rc = launch_start(k, &argv, k->child, log, err, errlen);
    free(log);
    if (!rc)
        rc = launch_wait_ready(k, c, timeout_s, NULL, err, errlen);
    return rc ? rc : 1;
}

int launch_stop(struct launched *k, struct client *c, double grace_s)
{
    if (c && !launch_exited(k)) {
        json_t *content = json_pack("{s:b}", "restart", 0);
        char id[CLIENT_ID_LEN];
        struct client_wait w = {.fds = &k->pidfd,
                                .nfds = k->pidfd >= 0,
                                .on_fd = on_exit_done,
                                .timeout_s = grace_s,
                                .skip_idle = true,
                                .no_heartbeat = true};
        struct msg *reply = NULL;
        if (client_send(c, CONNECTION_CONTROL, "shutdown_request", &content, NULL, id) ==
            0)
            client_wait(c, CONNECTION_CONTROL, id, &w, &reply);
        msg_free(reply);
    }
    if (wait_exit(k, grace_s))
        return 0;
    kill(k->pid, SIGTERM);
    if (wait_exit(k, 3))
        return 0;
    kill(k->pid, SIGKILL);
    return wait_exit(k, 5) ? 0 : -ETIMEDOUT;
}

char *launch_log_tail(const char *log_path, size_t max)
{
    FILE *f = log_path ? fopen(log_path, "r") : NULL;
    if (!f)
        return strdup("");
    char *buf = malloc(max + 1);
    size_t n = 0;
    if (buf) {
        if (fseek(f, 0, SEEK_END) == 0) {
            long size = ftell(f);
            if (size > (long)max)
                fseek(f, size - (long)max, SEEK_SET);
            else
                fseek(f, 0, SEEK_SET);
        }
        n = fread(buf, 1, max, f);
        buf[n] = 0;
    }
    fclose(f);
    if (buf && n == max) { /* start at a whole line */
        char *nl = strchr(buf, '\n');
        if (nl)
            memmove(buf, nl + 1, strlen(nl + 1) + 1);
    }
    return buf;
}
