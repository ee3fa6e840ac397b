/* worker_template: start the worker template, ask it for workers, notice its end.
 *
 * The template is ours, not the user's: no cell runs in it and no worker can
 * reach it (a worker closes the control socket, and the sandbox keeps it from
 * signalling or tracing processes outside it). So, unlike the worker's link,
 * its answer to a request is waited for, outside the loop: it comes in the
 * time of a fork, and the loop waits with it at most SPAWN_WAIT_MS (1 s). A
 * template that is slower, gone or answers nonsense is taken down, and
 * workers are exec'd as if there had never been one. */
#include "kernel/supervisor/worker_template.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/link/template_msg.h"
#include "kernel/link/worker_exit.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/preexec.h"

#define SPAWN_WAIT_MS 1000 /* for the pid of a worker it forks */

struct worker_template {
    struct loop *loop;
    enum template_state state;
    pid_t pid;
    int fd; /* the supervisor's end of the control socket; -1 when down */
    long long fd_event;
    double started_at;
};

/* Down for good: the socket closed, the process killed (reaped elsewhere). */
static void take_down(struct worker_template *t, const char *why)
{
    if (t->state == TEMPLATE_DOWN)
        return;
    log_warn("the worker template %s; workers are started without it from now on", why);
    t->state = TEMPLATE_DOWN;
    loop_del_file(t->loop, t->fd_event);
    t->fd_event = 0;
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    if (t->pid > 0)
        kill(t->pid, SIGKILL);
}

static void on_control(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    (void)events;
    struct worker_template *t = data;
    enum spawn_answer kind;
    pid_t pid;
    int err;
    int rc = spawn_recv_answer(t->fd, &kind, &pid, &err);
    if (rc == -EAGAIN)
        return;
    if (rc == 1 && kind == SPAWN_READY && t->state == TEMPLATE_STARTING &&
        pid == t->pid) {
        t->state = TEMPLATE_READY;
        log_debug("the worker template %d is ready in %.0f ms", (int)t->pid,
                  (monotime_now() - t->started_at) * 1e3);
        /* From now on its socket is read only in template_spawn. */
        loop_del_file(t->loop, t->fd_event);
        t->fd_event = 0;
        return;
    }
    take_down(t, rc == 0   ? "closed its control socket"
                 : rc == 1 ? "sent a message out of turn"
                           : "sent a message it should not have");
}

/* The template's command line: a worker's, with SPAWN_TEMPLATE_FLAG (new array of
 * borrowed strings, caller frees the array only). */
static char **template_argv(char *const argv[])
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **v = calloc(n + 2, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = argv[i];
    v[n] = SPAWN_TEMPLATE_FLAG;
    return v;
}

struct worker_template *template_start(struct loop *loop, char *const argv[],
                                       char *const envp[])
{
    struct worker_template *t = calloc(1, sizeof *t);
    char **targv = template_argv(argv);
    int sv[2] = {-1, -1};
    int devnull = -1;
    if (!t || !targv) {
        log_warn("no worker template: out of memory");
        goto fail;
    }
    t->loop = loop;
    t->fd = -1;
    /* The workers it forks are orphaned on purpose and must come to us. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        log_warn("no worker template: cannot become a subreaper: %s", strerror(errno));
        goto fail;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
        log_warn("no worker template: %s", strerror(errno));
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        log_warn("no worker template: fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        /* As worker_process.c's worker: only async-signal-safe calls until exec
         * (preexec.h). */
        preexec_setup(parent);
        if (dup2(sv[1], 3) < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
            _exit(WORKER_EXIT_EXEC);
        syscall(SYS_close_range, 4U, ~0U, 0U);
        execve(targv[0], targv, envp);
        _exit(WORKER_EXIT_EXEC);
    }
    close(sv[1]);
    close(devnull);
    free(targv);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    t->pid = pid;
    t->fd = sv[0];
    t->state = TEMPLATE_STARTING;
    t->started_at = monotime_now();
    long long id =
        loop_add_fd(loop, t->fd, LOOP_READABLE, LOOP_RANK_WORKER_LINK, on_control, t);
    if (id <= 0) {
        take_down(t, "cannot be watched");
        return t;
    }
    t->fd_event = id;
    log_debug("started the worker template %d", (int)pid);
    return t;
fail:
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (devnull >= 0)
        close(devnull);
    free(targv);
    free(t);
    return NULL;
}

void template_free(struct worker_template *t)
{
    if (!t)
        return;
    loop_del_file(t->loop, t->fd_event);
    if (t->fd >= 0)
        close(t->fd);
    if (t->state != TEMPLATE_DOWN && t->pid > 0)
        kill(t->pid, SIGKILL);
    free(t);
}

enum template_state template_state(const struct worker_template *t)
{
    return t ? t->state : TEMPLATE_DOWN;
}

pid_t template_pid(const struct worker_template *t)
{
    return t ? t->pid : 0;
}

int template_spawn(struct worker_template *t, const int *fds, size_t nfds,
                   const char *note, pid_t *pid)
{
    if (!t || t->state != TEMPLATE_READY)
        return -ENOTCONN;
    int rc = spawn_send_request(t->fd, fds, nfds, note);
    if (rc) {
        take_down(t, "cannot be asked for a worker");
        return rc;
    }
    double deadline = monotime_now() + SPAWN_WAIT_MS / 1e3;
    for (;;) {
        enum spawn_answer kind;
        int err;
        rc = spawn_recv_answer(t->fd, &kind, pid, &err);
        if (rc == 1 && kind == SPAWN_REPLY && *pid > 0)
            return 0;
        if (rc == 1 && kind == SPAWN_REPLY) {
            log_warn("the worker template could not fork: %s", strerror(err));
            return -(err > 0 ? err : EIO);
        }
        if (rc != -EAGAIN) {
            take_down(t, rc == 0 ? "closed its control socket" : "answered out of turn");
            return -EPIPE;
        }
        int left = (int)((deadline - monotime_now()) * 1e3);
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (left <= 0 || (poll(&p, 1, left) < 0 && errno != EINTR)) {
            take_down(t, "did not answer within a second");
            return -ETIMEDOUT;
        }
    }
}

bool template_reaped(struct worker_template *t, pid_t pid, int status)
{
    if (!t || pid != t->pid)
        return false;
    char how[160];
    if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(status));
    else
        worker_exit_describe(WEXITSTATUS(status), true, how, sizeof how);
    if (t->state != TEMPLATE_DOWN)
        take_down(t, how);
    t->pid = 0;
    return true;
}
