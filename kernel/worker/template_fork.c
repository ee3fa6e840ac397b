/* template_fork: the worker template forks workers.
 *
 * What is hard here:
 * - The parent. A worker must be the supervisor's child, so that the
 *   supervisor reaps it, sees it stop and learns how it died. The template
 *   forks twice: the first child forks the worker, reports its pid and exits,
 *   and the worker, orphaned, goes to the supervisor, which is a subreaper
 *   (PR_SET_CHILD_SUBREAPER). Only then may the worker ask to die with its
 *   parent: a parent-death signal asked for earlier would fire when the first
 *   child exits.
 * - The cgroup. The worker joins its group first, before it writes to any
 *   page: what it then allocates is charged to the group. The pages it still
 *   shares with the template were the template's, and stay charged to it.
 * - Python. Forking an initialised interpreter is safe only with one thread
 *   and with Python told (PyOS_BeforeFork and the two after-fork calls): the
 *   template never starts a thread, and the first child makes no Python call
 *   before it forks again and exits.
 * - Descriptors. The worker keeps exactly those of an exec'd worker: /dev/null,
 *   the log on 2 (and on the log's own descriptor), the link on 3; the
 *   template's control socket and everything else is closed. */
#include "kernel/worker/template_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/link/template_msg.h"
#include "kernel/util/log.h"
#include "kernel/worker/pyrt.h"

#define REPARENT_WAIT_NS 100000L /* between two looks at who the parent is */
#define REPARENT_TRIES   20000   /* two seconds of them */

/* In the new worker: the steps that make it an exec'd worker's equal. 0, or
 * -1 when it must not go on (its supervisor is not its parent). */
static int become_worker(pid_t supervisor, int *fds, size_t nfds, int logfd)
{
    /* A worker forked from the template shows as one in ps and top, rather than
     * as the template (whose command line it keeps). */
    prctl(PR_SET_NAME, "sandpit-worker");
    for (size_t i = SPAWN_FD_PROCS; i < nfds; i++)
        if (write(fds[i], "0", 1) != 1)
            break; /* the worker finds itself outside its group and says so */
    setpgid(0, 0);
    struct timespec pause = {0, REPARENT_WAIT_NS};
    for (int i = 0; getppid() != supervisor && i < REPARENT_TRIES; i++)
        nanosleep(&pause, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != supervisor)
        return -1; /* the supervisor has gone, or is not a subreaper */
    if (dup2(fds[SPAWN_FD_LINK], 3) < 0 || dup2(fds[SPAWN_FD_LOG], 2) < 0 ||
        dup2(fds[SPAWN_FD_LOG], logfd) < 0)
        return -1;
    fcntl(logfd, F_SETFD, FD_CLOEXEC);
    if (logfd > 4)
        syscall(SYS_close_range, 4U, (unsigned)logfd - 1, 0U);
    syscall(SYS_close_range, (unsigned)logfd + 1, ~0U, 0U);
    pyrt_after_fork_child();
    return 0;
}

static void close_fds(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

int spawner_serve(int ctl, int logfd, char *note, size_t notelen)
{
    pid_t supervisor = getppid();
    prctl(PR_SET_NAME, "sandpit-tmpl");
    pyrt_template_ready();
    int rc = spawn_send_ready(ctl);
    if (rc)
        return rc;
    for (;;) {
        int fds[SPAWN_MAX_FDS];
        size_t nfds = 0;
        rc = spawn_recv_request(ctl, fds, &nfds, note, notelen);
        if (rc == 0)
            return 0;
        if (rc == -EBADMSG) {
            log_warn("the template was sent a request it cannot read; ignored");
            spawn_send_reply(ctl, 0, EBADMSG);
            continue;
        }
        if (rc < 0)
            return rc;
        pyrt_before_fork();
        pid_t first = fork();
        if (first == 0) {
            pid_t worker = fork();
            if (worker == 0)
                return become_worker(supervisor, fds, nfds, logfd) == 0 ? 1 : -EPIPE;
            spawn_send_reply(ctl, worker > 0 ? worker : 0, worker > 0 ? 0 : errno);
            _exit(0);
        }
        int fork_errno = errno;
        pyrt_after_fork_parent();
        close_fds(fds, nfds);
        if (first < 0) {
            spawn_send_reply(ctl, 0, fork_errno);
            continue;
        }
        while (waitpid(first, NULL, 0) < 0 && errno == EINTR)
            ;
    }
}
