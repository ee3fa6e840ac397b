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
    c->log_fd = -1;
    link_reader_init(&c->reader);
    sandbox_cgroup_init(&c->cgroup);
    for (int i = 0; i < CHILD_RETIRED; i++)
        sandbox_cgroup_init(&c->retired[i]);
}

/* Removes the groups of workers that have ended; a group still holding its
 * worker (killed, not yet gone) stays for the next try. */
static void sweep_groups(struct child *c)
{
    for (int i = 0; i < CHILD_RETIRED; i++)
        if (c->retired[i].version && sandbox_cgroup_remove(&c->retired[i]) == 0)
            sandbox_cgroup_release(&c->retired[i]);
}

/* The running worker's group joins the retired ones, to be removed once the
 * worker is reaped. */
static void retire_group(struct child *c)
{
    if (!c->cgroup.version)
        return;
    sweep_groups(c);
    for (int i = 0; i < CHILD_RETIRED; i++)
        if (!c->retired[i].version) {
            c->retired[i] = c->cgroup;
            sandbox_cgroup_init(&c->cgroup);
            return;
        }
    /* Four workers killed and none gone: leave this group to the next kernel. */
    sandbox_cgroup_release(&c->cgroup);
}

void child_reaped(struct child *c)
{
    sweep_groups(c);
}

bool child_memory_killed(const struct child *c)
{
    return sandbox_cgroup_memory_killed(&c->cgroup);
}

/* Names, and prefixes ending in '*', of variables a sandboxed cell may see. */
static const char *const env_allowed[] = {
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONWARNINGS",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "LC_*",
    "JPY_PARENT_PID",
    "JPY_SESSION_NAME",
    /* Where the user's setup lives, for the sandbox to keep it out of reach. */
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_PATH",
    "IPYTHONDIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "SANDPIT_*",
    NULL,
};

static bool env_kept(const char *entry, const char *extra)
{
    size_t n = strcspn(entry, "=");
    for (const char *const *a = env_allowed; *a; a++) {
        size_t len = strlen(*a);
        if ((*a)[len - 1] == '*' ? strncmp(entry, *a, len - 1) == 0
                                 : len == n && strncmp(entry, *a, n) == 0)
            return true;
    }
    for (const char *p = extra; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(entry, p, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

char **child_environment(bool sandbox, const char *pass_env)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (sandbox && !env_kept(environ[i], pass_env))
            continue;
        if (!(envp[k] = strdup(environ[i]))) {
            child_free_environment(envp);
            return NULL;
        }
        k++;
    }
    return envp;
}

void child_free_environment(char **envp)
{
    for (size_t i = 0; envp && envp[i]; i++)
        free(envp[i]);
    free(envp);
}

void child_read_log(struct child *c)
{
    for (;;) {
        ssize_t n =
            read(c->log_fd, c->log_buf + c->log_len, sizeof c->log_buf - c->log_len);
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(c->log_fd);
                c->log_fd = -1;
            }
            return;
        }
        c->log_len += (size_t)n;
        /* Whole lines, or a full buffer, go to the log. */
        for (;;) {
            char *nl = memchr(c->log_buf, '\n', c->log_len);
            size_t len = nl ? (size_t)(nl - c->log_buf) : c->log_len;
            if (!nl && c->log_len < sizeof c->log_buf)
                break;
            char line[sizeof c->log_buf + 1];
            size_t k = 0;
            for (size_t i = 0; i < len; i++) {
                unsigned char ch = (unsigned char)c->log_buf[i];
                line[k++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
            }
            line[k] = 0;
            /* The mark says these lines came from the worker, whose fd 2 the
             * user's code can write to as well. */
            log_plain("worker| %s\n", line);
            size_t used = nl ? len + 1 : len;
            memmove(c->log_buf, c->log_buf + used, c->log_len - used);
            c->log_len -= used;
        }
    }
}

void child_release(struct child *c)
{
    child_stop(c);
    sweep_groups(c);
    for (int i = 0; i < CHILD_RETIRED; i++)
        sandbox_cgroup_release(&c->retired[i]);
    if (c->log_fd >= 0)
        close(c->log_fd);
    link_reader_release(&c->reader);
    free(c->out);
    child_init(c);
}

/* envp with SANDPIT_CGROUP=note appended (a new array of borrowed strings but
 * the last, which is new: free both with free_env_with). */
static char **env_with(char *const envp[], const char *note)
{
    size_t n = 0;
    while (envp[n])
        n++;
    char **e = calloc(n + 2, sizeof *e);
    char *var = malloc(strlen("SANDPIT_CGROUP=") + strlen(note) + 1);
    if (!e || !var) {
        free(e);
        free(var);
        return NULL;
    }
    memcpy(e, envp, n * sizeof *e);
    strcpy(var, "SANDPIT_CGROUP=");
    strcat(var, note);
    e[n] = var;
    return e;
}

static void free_env_with(char **e)
{
    size_t n = 0;
    while (e && e[n])
        n++;
    if (n)
        free(e[n - 1]);
    free(e);
}

int child_start(struct child *c, char *const argv[], char *const envp[],
                const struct sandbox_cgroup_limits *limits)
{
    int sv[2], logp[2];
    sandbox_cgroup_init(&c->cgroup);
    if (limits) {
        if (sandbox_cgroup_create(&c->cgroup, ++c->started, limits) == 0)
            log_info("cgroup: %s", c->cgroup.detail);
        else
            log_warn("no cgroup for the worker: %s", c->cgroup.detail);
    }
    char **env = env_with(envp, c->cgroup.detail[0] ? c->cgroup.detail : "none");
    if (!env || pipe2(logp, O_CLOEXEC) < 0) {
        int e = env ? errno : ENOMEM;
        free_env_with(env);
        sandbox_cgroup_remove(&c->cgroup);
        sandbox_cgroup_release(&c->cgroup);
        return -e;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        close(logp[0]);
        close(logp[1]);
        free_env_with(env);
        sandbox_cgroup_remove(&c->cgroup);
        sandbox_cgroup_release(&c->cgroup);
        return -e;
    }
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
        close(logp[0]);
        close(logp[1]);
        free_env_with(env);
        sandbox_cgroup_remove(&c->cgroup);
        sandbox_cgroup_release(&c->cgroup);
        return -e;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        close(devnull);
        close(logp[0]);
        close(logp[1]);
        free_env_with(env);
        sandbox_cgroup_remove(&c->cgroup);
        sandbox_cgroup_release(&c->cgroup);
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
        /* Before exec: nothing the worker runs is outside its group. If this fails,
         * the worker finds itself outside and says so in its report. */
        sandbox_cgroup_join(&c->cgroup);
        if (dup2(sv[1], 3) < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
            dup2(logp[1], 2) < 0)
            _exit(127);
        syscall(SYS_close_range, 4U, ~0U, 0U);
        execve("/proc/self/exe", argv, env);
        _exit(127);
    }
    free_env_with(env);
    sandbox_cgroup_started(&c->cgroup, pid);
    close(sv[1]);
    close(devnull);
    close(logp[1]);
    if (c->log_fd >= 0)
        close(c->log_fd);
    c->log_fd = logp[0];
    c->log_len = 0;
    fcntl(c->log_fd, F_SETFL, fcntl(c->log_fd, F_GETFL) | O_NONBLOCK);
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
    retire_group(c);
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
