/* child: start, feed and end the worker process.
 *
 * The hard part is what happens between fork and exec. The supervisor has
 * ZeroMQ's threads running, so the child may only make async-signal-safe calls
 * until it execs: everything it needs (argv, the path of /dev/null) is made
 * before fork. The child leaves the supervisor's process group, so that a
 * SIGINT sent to the whole group (interrupt_mode "signal") reaches it once,
 * forwarded by the supervisor, not twice; and it asks to be killed if the
 * supervisor dies, so that no worker outlives its kernel. */
#include "kernel/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/log.h"

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void child_init(struct child *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    link_reader_init(&c->reader);
}

void child_release(struct child *c)
{
    child_stop(c);
    link_reader_release(&c->reader);
    free(c->out);
    child_init(c);
}

int child_start(struct child *c, char *const argv[])
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    /* Big socket buffers: a chart of a few hundred kilobytes then passes in one
     * write, and the worker rarely waits for the supervisor. */
    int size = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return -e;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        close(devnull);
        return -e;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        if (dup2(sv[1], 3) < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
            _exit(127);
        syscall(SYS_close_range, 4U, ~0U, 0U);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(sv[1]);
    close(devnull);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    c->pid = pid;
    c->fd = sv[0];
    c->state = CHILD_STARTING;
    c->started_at = now_mono();
    c->link_closed = false;
    c->out_len = 0;
    c->reader.off = c->reader.len = 0;
    log_info("started worker %d", (int)pid);
    return 0;
}

void child_stop(struct child *c)
{
    if (c->pid > 0)
        kill(c->pid, SIGKILL);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->pid = 0;
    c->state = CHILD_DOWN;
    c->out_len = 0;
    c->reader.off = c->reader.len = 0;
}

int child_flush(struct child *c)
{
    while (c->out_len) {
        ssize_t n = write(c->fd, c->out, c->out_len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -errno;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
    return 0;
}

int child_send(struct child *c, const char *json, size_t len,
               const struct wire_frame *buffers, size_t nbuffers)
{
    if (c->fd < 0)
        return -EPIPE;
    unsigned char *frame;
    size_t flen;
    int rc = link_encode(json, len, buffers, nbuffers, &frame, &flen);
    if (rc)
        return rc;
    if (c->out_cap - c->out_len < flen) {
        size_t ncap = c->out_cap ? c->out_cap : 4096;
        while (ncap - c->out_len < flen)
            ncap *= 2;
        unsigned char *nb = realloc(c->out, ncap);
        if (!nb) {
            free(frame);
            return -ENOMEM;
        }
        c->out = nb;
        c->out_cap = ncap;
    }
    memcpy(c->out + c->out_len, frame, flen);
    c->out_len += flen;
    free(frame);
    return child_flush(c);
}

bool child_has_pending(const struct child *c)
{
    return c->fd >= 0 && c->out_len > 0;
}

void child_signal(struct child *c, int sig)
{
    if (c->pid > 0)
        kill(c->pid, sig);
}
