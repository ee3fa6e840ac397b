/* The sandbox's two stages, each applying its layers in order.
 *
 * The order is the point. Stage 1 runs before the interpreter exists, while the worker
 * has one thread: rlimits first (they cost nothing and hold from then on), then the
 * namespaces (unshare(CLONE_NEWUSER) refuses a multi-threaded caller, and the mounts
 * need the capabilities the new user namespace grants), then the capabilities are
 * dropped (nothing after this needs them), then Landlock (before Linux ABI 8 it binds
 * only the calling thread, so it must come before CPython, OpenBLAS or the preloads start
 * any). Stage 2 runs once the interpreter and its preloads are up, because Debian's
 * pandas runs `uname -p` at import and matplotlib may run fc-list: the seccomp filter
 * that forbids new processes comes last, with TSYNC so it covers threads that exist by
 * then.
 *
 * A layer the machine lacks is reported and skipped; the others still apply. The report
 * says "active" only for what was applied and verified where that is cheap; report.c
 * keeps it.
 */
#include "sandbox/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void sandbox_policy_init(struct sandbox_policy *p)
{
    memset(p, 0, sizeof *p);
    p->enabled = true;
    p->network = false;
    p->max_open_files = SANDBOX_DEFAULT_OPEN_FILES;
}

/* The number of threads of this process, from /proc/self/task (0 if it cannot tell). */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void set_all(struct sandbox_report *r, size_t from, size_t to,
                    enum sandbox_state s, const char *detail)
{
    for (size_t i = from; i < to; i++)
        sandbox__layer_set(&r->layers[i], s, "%s", detail);
}

int sandbox_enter(const struct sandbox_policy *p, struct sandbox_report *r)
{
    if (r->n == 0)
        sandbox_report_init(r);
    if (!p->enabled) {
        set_all(r, 0, SANDBOX_LAYER_SECCOMP, SANDBOX_DISABLED, "sandbox off");
        return 0;
    }
    int threads = count_threads();
    if (threads > 1) {
        char why[96];
        snprintf(why, sizeof why,
                 "not applied: the process has %d threads, stage 1 needs one", threads);
        set_all(r, 0, SANDBOX_LAYER_SECCOMP, SANDBOX_FAILED, why);
        return -EINVAL;
    }

    struct sandbox_layer *L = r->layers;
    int first = 0;
#define KEEP(rc)                                                                         \
    do {                                                                                 \
        int rc_ = (rc);                                                                  \
        if (rc_ < 0 && first == 0)                                                       \
            first = rc_;                                                                 \
    } while (0)

    KEEP(sandbox__rlimits_apply(p, &L[SANDBOX_LAYER_RLIMITS]));
    KEEP(sandbox__namespaces_enter(p, &L[SANDBOX_LAYER_USERNS], &L[SANDBOX_LAYER_NETNS],
                                   &L[SANDBOX_LAYER_MOUNTNS]));
    KEEP(sandbox__rlimits_limit_tasks(&L[SANDBOX_LAYER_RLIMITS],
                                      L[SANDBOX_LAYER_USERNS].state == SANDBOX_ACTIVE));
    KEEP(sandbox__caps_drop(&L[SANDBOX_LAYER_CAPS]));
    KEEP(sandbox__landlock_apply(p, &L[SANDBOX_LAYER_LANDLOCK], &r->landlock_abi));
    /* A hidden path still readable is a failure where the mount namespace that
     * covers it is in force; where there is none (no user namespaces), Landlock
     * hides it only outside the workspace, and the report states the gap. */
    KEEP(sandbox__hidden_check(p, &L[SANDBOX_LAYER_MOUNTNS],
                               L[SANDBOX_LAYER_MOUNTNS].state == SANDBOX_ACTIVE));
#undef KEEP
    return first;
}

int sandbox_lock(const struct sandbox_policy *p, struct sandbox_report *r)
{
    if (r->n == 0)
        sandbox_report_init(r);
    if (!p->enabled) {
        sandbox__layer_set(&r->layers[SANDBOX_LAYER_SECCOMP], SANDBOX_DISABLED,
                           "sandbox off");
        return 0;
    }
    return sandbox__seccomp_apply(p, &r->layers[SANDBOX_LAYER_SECCOMP]);
}

int sandbox_probe(const struct sandbox_policy *p, struct sandbox_report *r)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return -err;
    }
    if (pid == 0) {
        /* The report holds no pointers but the layer names, which are static strings of
         * this same program, so it can cross the pipe as bytes. */
        struct sandbox_report child;
        sandbox_report_init(&child);
        close(fds[0]);
        sandbox_enter(p, &child);
        sandbox_lock(p, &child);
        ssize_t n = write(fds[1], &child, sizeof child);
        _exit(n == (ssize_t)sizeof child ? 0 : 1);
    }
    close(fds[1]);
    struct sandbox_report got;
    size_t have = 0;
    while (have < sizeof got) {
        ssize_t n = read(fds[0], (char *)&got + have, sizeof got - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (have != sizeof got || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -ECHILD;
    *r = got;
    return 0;
}
