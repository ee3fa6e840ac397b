/* worker_lifecycle: keep a worker running.
 *
 * What runs as the worker: Python's own program (SANDPIT_WORKER_PYTHON, the
 * python3 that sandpit was built with) with the worker's library,
 * sandpit-worker.so, preloaded (kernel/worker_preload.c); in the sanitizers'
 * builds, the program sandpit-worker (kernel/worker_main.c). Either is
 * installed beside sandpit. Its command line is the kernel's options
 * (worker_argv) and its environment worker_env_new's, built once. The first
 * worker is exec'd; when one is first replaced, the template starts beside its
 * successor, and later workers are forked from it (worker_template.c), the next one
 * beforehand once the kernel is idle (start_spare; not with --preload).
 *
 * A worker that dies while starting is most likely to die again (a broken
 * preload, a sandbox the machine refuses): after three in a row the next start
 * waits 1, 2, 4 ... up to 30 s, and meanwhile requests are answered at once
 * with an error that points to the log, rather than left waiting. One that
 * says hello resets the count. */
#include "kernel/supervisor/worker_lifecycle.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "kernel/link/worker_exit.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/shells.h"
#include "kernel/supervisor/worker_env.h"

int respawn_worker_program(char *out, size_t len, char *why, size_t whylen)
{
    /* The worker's library (or, in the sanitizers' builds, its program) is
     * installed beside this program. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        int rc = n < 0 ? -errno : -ENOENT;
        snprintf(why, whylen, "cannot find this binary (%s)", strerror(-rc));
        return rc;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    int dir = slash ? (int)(slash - self) : 0;
    if (snprintf(out, len, "%.*s/%s", dir, self, RESPAWN_PROGRAM) >= (int)len) {
        snprintf(why, whylen, "the path of the worker's program is too long");
        return -ENAMETOOLONG;
    }
#ifdef SANDPIT_WORKER_PYTHON
    int mode = R_OK;
#else
    int mode = X_OK;
#endif
    if (access(out, mode) != 0) {
        int rc = -errno;
        snprintf(why, whylen,
                 "the worker's program %s cannot be run (%s): it is installed beside "
                 "sandpit (make install puts both in place)",
                 out, strerror(-rc));
        return rc;
    }
#ifdef SANDPIT_WORKER_PYTHON
    if (access(SANDPIT_WORKER_PYTHON, X_OK) != 0) {
        int rc = -errno;
        snprintf(why, whylen,
                 "the worker runs in %s, the Python sandpit was built with, which "
                 "cannot be run (%s)",
                 SANDPIT_WORKER_PYTHON, strerror(-rc));
        return rc;
    }
#endif
    return 0;
}

int respawn_init(struct respawn *w, struct kernel *k, struct child *c, struct loop *l,
                 const struct options *opts)
{
    memset(w, 0, sizeof *w);
    w->k = k;
    w->child = c;
    w->loop = l;
    w->opts = opts;
    char program[PATH_MAX], why[PATH_MAX + 256];
    int rc = respawn_worker_program(program, sizeof program, why, sizeof why);
    if (rc) {
        log_error("%s", why);
        return rc;
    }
    return (w->program = strdup(program)) ? 0 : -ENOMEM;
}

void respawn_release(struct respawn *w)
{
    template_free(w->tpl);
    w->tpl = NULL;
    free(w->tpl_history);
    w->tpl_history = NULL;
    loop_del_timer(w->loop, w->retry_timer);
    loop_del_timer(w->loop, w->hello_timer);
    loop_del_timer(w->loop, w->spare_timer);
    worker_env_free(w->env);
    w->env = NULL;
    free(w->program);
    w->program = NULL;
}

/* The program's path (Python's, where the worker is a library), then the
 * options. */
static char **worker_argv(const char *program, const struct options *opts,
                          const struct history *history)
{
#ifdef SANDPIT_WORKER_PYTHON
    (void)program;
    program = SANDPIT_WORKER_PYTHON;
#endif
    char **argv = calloc(2, sizeof *argv);
    int argc = 1;
    if (!argv || !(argv[0] = strdup(program)))
        goto fail;
    if ((argc = options_to_argv(opts, &argv, argc)) < 0)
        goto fail;
    /* The history's folder where it is now (a cell may have renamed a folder
     * above it): the worker hides the folder of the last --history. */
    char dir[PATH_MAX - 2];
    if (history && history_folder(history, dir, sizeof dir) == 0) {
        char **na = realloc(argv, (size_t)(argc + 3) * sizeof *na);
        if (!na)
            goto fail;
        argv = na;
        argv[argc] = strdup("--history");
        if (!argv[argc] || asprintf(&argv[argc + 1], "%s/-", dir) < 0) {
            argv[argc + 1] = NULL;
            goto fail;
        }
        argv[argc + 2] = NULL;
    }
    return argv;
fail:
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
    return NULL;
}

static double on_retry(struct loop *l, long long id, void *data);
static double on_hello_deadline(struct loop *l, long long id, void *data);

static void retry_in(struct respawn *w, double delay)
{
    loop_del_timer(w->loop, w->retry_timer);
    long long id = loop_add_timer(w->loop, delay, on_retry, w);
    w->retry_timer = id > 0 ? id : 0;
}

static void free_argv(char **argv)
{
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* Starts the worker (or the spare) with this command line, in a group with the
 * kernel's limits when the sandbox is on. 0 or -errno. */
static int start_child(struct respawn *w, char **argv, bool spare)
{
    struct sandbox_cgroup_limits limits = {(uint64_t)w->opts->memory_mib << 20,
                                           SANDBOX_MAX_TASKS, w->opts->cpus};
    const struct sandbox_cgroup_limits *l = w->opts->sandbox ? &limits : NULL;
    if (!argv || !w->env)
        return -ENOMEM;
    return spare ? child_start_spare(w->child, argv, w->env, l, w->tpl)
                 : child_start(w->child, argv, w->env, l, w->tpl);
}

/* The history's folder now ("" for none): a new one in *out (caller frees). */
static char *history_now(struct respawn *w)
{
    char dir[PATH_MAX];
    return strdup(history_folder(&w->k->history, dir, sizeof dir) == 0 ? dir : "");
}

/* Has the history's folder moved since the template took its options? Its
 * workers would hide where it was: the template goes, and the next worker
 * is exec'd with options of now (and starts a template of its own). */
static bool template_stale(struct respawn *w)
{
    if (!w->tpl)
        return false;
    char *now = history_now(w);
    bool stale = !now || strcmp(now, w->tpl_history ? w->tpl_history : "") != 0;
    free(now);
    return stale;
}

void respawn_start(struct respawn *w)
{
    if (template_stale(w)) {
        log_info("the history's folder has moved: the worker template starts again");
        template_free(w->tpl);
        w->tpl = NULL;
        w->tpl_tried = false;
    }
    loop_del_timer(w->loop, w->retry_timer);
    loop_del_timer(w->loop, w->hello_timer);
    loop_del_timer(w->loop, w->spare_timer);
    w->retry_timer = w->hello_timer = w->spare_timer = 0;
    w->stops = 0;
    char **argv = worker_argv(w->program, w->opts, &w->k->history);
    if (!w->env)
        w->env = worker_env_new(w->opts->sandbox, w->opts->pass_env, w->program);
    /* The template starts when a worker is first replaced (a restart, a crash),
     * beside the worker that replaces it, which is exec'd: a kernel that never
     * replaces its worker never pays for a template, in time or in memory, and
     * one that does (an agent's, reset between tasks) has the next ones forked. */
    if (argv && w->env && w->started && !w->tpl_tried && w->opts->template) {
        w->tpl_tried = true;
        w->tpl = template_start(w->loop, argv, w->env);
        free(w->tpl_history);
        w->tpl_history = history_now(w);
    }
    int rc = start_child(w, argv, false);
    free_argv(argv);
    w->started += rc == 0;
    if (rc) {
        log_error("cannot start the worker: %s", strerror(-rc));
        retry_in(w, 1);
        return;
    }
    long long id = loop_add_timer(w->loop, RESPAWN_HELLO_TIMEOUT_S, on_hello_deadline, w);
    w->hello_timer = id > 0 ? id : 0;
}

static double on_retry(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct respawn *w = data;
    w->retry_timer = 0;
    if (child_state(w->child) == CHILD_DOWN)
        respawn_start(w);
    return LOOP_NOMORE;
}

static double on_hello_deadline(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct respawn *w = data;
    w->hello_timer = 0;
    if (child_state(w->child) == CHILD_STARTING) {
        log_error("the worker did not start within %.0f s; restarting it",
                  RESPAWN_HELLO_TIMEOUT_S);
        w->start_failures++;
        child_stop(w->child);
        respawn_start(w);
    }
    return LOOP_NOMORE;
}

void respawn_restart(struct respawn *w, const char *why)
{
    w->k->counts.worker_restarts++;
    shells_worker_lost(w->k, why);
    child_stop(w->child);
    respawn_start(w);
}

static void describe_exit(const struct child *c, int status, char *buf, size_t len)
{
    /* The link closes when the worker dies, before its status is known: the
     * supervisor's own SIGKILL after that says nothing, the status does. */
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && child_memory_killed(c))
        snprintf(buf, len,
                 "ran out of memory (its limit counts shared memory and files "
                 "in memory too) and was stopped");
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && child_link_closed(c))
        snprintf(buf, len, "closed its link to the kernel and was stopped");
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
        snprintf(buf, len,
                 "was stopped by the sandbox for a forbidden kind of system call "
                 "(signal %d, %s)",
                 SIGSYS, strsignal(SIGSYS));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        /* Its own statuses until it says hello; then a cell's (os._exit). */
        worker_exit_describe(WEXITSTATUS(status), child_state(c) == CHILD_STARTING, buf,
                             len);
}

void respawn_reaped(struct respawn *w, int status)
{
    char how[160], why[512];
    describe_exit(w->child, status, how, sizeof how);
    bool was_starting = child_state(w->child) == CHILD_STARTING;
    log_warn("the worker %s", how);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
        child_memory_killed(w->child))
        w->k->counts.out_of_memory++;
    if (!was_starting)
        w->k->counts.worker_restarts++;
    child_exited(w->child);
    loop_del_timer(w->loop, w->hello_timer);
    w->hello_timer = 0;
    snprintf(why, sizeof why,
             "The worker process running this cell %s. It has been restarted: "
             "variables and imports from earlier cells are lost.",
             how);
    shells_worker_lost(w->k, why);
    if (was_starting && ++w->start_failures >= 3) {
        double delay = w->start_failures >= 8 ? 30 : 1 << (w->start_failures - 3);
        log_error("the worker failed to start %d times in a row; trying again in %.0f s",
                  w->start_failures, delay);
        retry_in(w, delay);
        shells_pump(w->k); /* answers queued requests with an error */
        return;
    }
    respawn_start(w);
}

void respawn_stopped(struct respawn *w, int sig)
{
    char text[320];
    if (++w->stops > RESPAWN_MAX_STOPS) {
        snprintf(text, sizeof text,
                 "The worker was stopped by signal %d (SIG%s) %d times, so it was "
                 "restarted: variables and imports from earlier cells are lost.",
                 sig, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", w->stops);
        log_warn("%s", text);
        respawn_restart(w, text);
        return;
    }
    const char *name = sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
    log_warn("the worker was stopped by signal %d (SIG%s); continuing it", sig, name);
    child_signal(w->child, SIGCONT);
    snprintf(text, sizeof text,
             "\n[sandpit: the worker was stopped by signal %d (SIG%s) and has been "
             "continued; a worker stopped more than %d times is restarted]\n",
             sig, name, RESPAWN_MAX_STOPS);
    for (size_t i = 0; i < w->k->nshells; i++)
        if (w->k->shells[i].current)
            limits_note(w->k, w->k->shells[i].current, text);
}

bool respawn_reaped_other(struct respawn *w, pid_t pid, int status)
{
    return child_spare_reaped(w->child, pid, status) ||
           template_reaped(w->tpl, pid, status);
}

/* Once a worker is ready (and the kernel idle), the next one starts from the
 * template, so that a restart or a crash costs no more than swapping one for
 * the other. Not with --preload: the preloads are the user's code, and they
 * run when a worker starts, so they would run before the restart that asked
 * for them. */
static void start_spare(struct respawn *w)
{
    if (!w->opts->template || w->opts->preload ||
        template_state(w->tpl) != TEMPLATE_READY || template_stale(w))
        return;
    char **argv = worker_argv(w->program, w->opts, &w->k->history);
    int rc = start_child(w, argv, true);
    free_argv(argv);
    if (rc && rc != -EAGAIN)
        log_warn("cannot start a worker beforehand: %s", strerror(-rc));
}

/* The kernel has run nothing for RESPAWN_SPARE_AFTER_IDLE_S since the timer was
 * set (or last looked): the next worker starts; else it looks again as long
 * again later. */
static double on_spare_due(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct respawn *w = data;
    if (child_state(w->child) != CHILD_READY) {
        w->spare_timer = 0;
        return LOOP_NOMORE;
    }
    if (kernel_any_running(w->k))
        return RESPAWN_SPARE_AFTER_IDLE_S;
    w->spare_timer = 0;
    start_spare(w);
    return LOOP_NOMORE;
}

bool respawn_hello(struct respawn *w)
{
    if (child_state(w->child) != CHILD_STARTING)
        return false;
    child_set_ready(w->child);
    w->start_failures = 0;
    loop_del_timer(w->loop, w->hello_timer);
    w->hello_timer = 0;
    log_info("worker %d ready in %.0f ms", (int)child_pid(w->child),
             child_age(w->child) * 1000);
    loop_del_timer(w->loop, w->spare_timer);
    long long id = loop_add_timer(w->loop, RESPAWN_SPARE_AFTER_IDLE_S, on_spare_due, w);
    w->spare_timer = id > 0 ? id : 0;
    return true;
}

enum kernel_worker respawn_state(const struct respawn *w)
{
    switch (child_state(w->child)) {
    case CHILD_READY:
        return KERNEL_WORKER_READY;
    case CHILD_DOWN:
        return w->retry_timer ? KERNEL_WORKER_FAILING : KERNEL_WORKER_STARTING;
    case CHILD_STARTING:
        break;
    }
    return KERNEL_WORKER_STARTING;
}
