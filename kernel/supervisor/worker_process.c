/* worker_process: start, feed and end the worker process.
 *
 * The hard part is what happens between fork and exec. The supervisor has
 * ZeroMQ's threads running, so the child may only make async-signal-safe calls
 * until it execs: everything it needs (argv, the path of /dev/null) is made
 * before fork. The child leaves the supervisor's process group, so that a
 * SIGINT sent to the whole group (interrupt_mode "signal") reaches it once,
 * forwarded by the supervisor, not twice; and it asks to be killed if the
 * supervisor dies, so that no worker outlives its kernel.
 *
 * What the supervisor queues for the worker is bounded by the worker's reading
 * it: past OUT_HIGH bytes waiting, the link is not read, so a worker whose code
 * asks (a history query) without reading stops being heard; the frames it sent
 * meanwhile wait in the reader, and are routed once it has read. */
#include "kernel/supervisor/worker_process.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/link/template_msg.h"
#include "kernel/link/worker_exit.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/preexec.h"
#include "kernel/supervisor/worker_template.h"
#include "kernel/supervisor/worker_env.h"
#include "kernel/supervisor/worker_logpipe.h"
#include "kernel/supervisor/proc_stat.h"
#include "sandbox/cgroup.h"
#include "sandbox/stop.h"

#define CHILD_RETIRED 4  /* groups of stopped workers not reaped yet */
#define READ_TURNS    64 /* reads of the link per event, so a flood cannot hold the loop */
#define TRIM_AFTER    (1u << 20) /* a frame this large: give freed memory back after it */
#define TRIM_IDLE_S   0.5        /* ... once no large frame has come for this long */
/* Bytes queued for the worker past which its link is not read: what it asks for
 * (a history query's answer) waits in this buffer until it reads, so a worker
 * that asks and never reads stops being heard rather than growing it. */
#define OUT_HIGH (8u << 20)

/* A worker's process as it is started: its pid, the supervisor's end of its
 * link, its log and its group. */
struct proc {
    pid_t pid; /* 0: none */
    int fd;
    struct logpipe log;
    struct sandbox_cgroup cgroup;
};

struct child {
    struct loop *loop;
    struct child_events ev;
    pid_t pid;
    enum child_state state;
    int fd; /* the supervisor's end of the link, non-blocking; -1 when down */
    long long fd_event;
    struct link_reader reader;
    unsigned char *out; /* bytes not yet written to the link */
    size_t out_len, out_cap;
    unsigned long long queued, written; /* bytes ever queued; ever written or dropped */
    double started_at;                  /* monotonic seconds */
    bool link_closed;                   /* the link closed before the process ended */
    struct logpipe log;                 /* the running worker's (or the last one's) */
    long long trim_timer;         /* gives memory back once large frames stop; 0: none */
    struct sandbox_cgroup cgroup; /* the running worker's group */
    struct sandbox_cgroup retired[CHILD_RETIRED]; /* stopped workers', until reaped */
    unsigned started;                             /* workers started; names groups */
    struct proc spare;  /* a worker started beforehand, its link not read yet */
    pid_t template_pid; /* the template the workers came from, kept when one stops */
};

struct child *child_new(struct loop *loop, const struct child_events *events)
{
    struct child *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->ev = *events;
    c->fd = -1;
    c->log.fd = -1;
    c->spare.log.fd = -1;
    /* Every orphan of a worker's tree comes back to us, so that stopping the worker
     * can end it even where there is no cgroup (stop.h). */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        log_warn("cannot become a subreaper: %s", strerror(errno));
    link_reader_init(&c->reader);
    sandbox_cgroup_init(&c->cgroup);
    sandbox_cgroup_init(&c->spare.cgroup);
    for (int i = 0; i < CHILD_RETIRED; i++)
        sandbox_cgroup_init(&c->retired[i]);
    return c;
}

/* Removes the groups of workers that have ended; a group still holding its
 * worker (killed, not yet gone) stays for the next try. */
static void sweep_groups(struct child *c)
{
    for (int i = 0; i < CHILD_RETIRED; i++)
        if (c->retired[i].version && sandbox_cgroup_remove(&c->retired[i]) == 0)
            sandbox_cgroup_release(&c->retired[i]);
}

/* A stopped worker's group (the running one's, or the spare's) joins the
 * retired ones, to be removed once the worker is reaped. */
static void retire_group(struct child *c, struct sandbox_cgroup *cg)
{
    if (!cg->version)
        return;
    sweep_groups(c);
    for (int i = 0; i < CHILD_RETIRED; i++)
        if (!c->retired[i].version) {
            c->retired[i] = *cg;
            sandbox_cgroup_init(cg);
            return;
        }
    /* Four workers killed and none gone: leave this group to the next kernel. */
    sandbox_cgroup_release(cg);
}

void child_reaped(struct child *c)
{
    sweep_groups(c);
}

bool child_memory_killed(const struct child *c)
{
    return sandbox_cgroup_memory_killed(&c->cgroup);
}

static void drop_spare(struct child *c, bool reaped);

void child_free(struct child *c)
{
    if (!c)
        return;
    child_stop(c);
    drop_spare(c, false);
    loop_del_timer(c->loop, c->trim_timer);
    sweep_groups(c);
    for (int i = 0; i < CHILD_RETIRED; i++)
        sandbox_cgroup_release(&c->retired[i]);
    worker_logpipe_close(&c->log);
    link_reader_release(&c->reader);
    free(c->out);
    free(c);
}

/* The buffers grow to the largest frame that passed; once empty, a large one is
 * given back, so that one large chart does not keep the supervisor large. */
static void shrink_out(struct child *c)
{
    if (c->out_len || c->out_cap <= LINK_READER_KEEP)
        return;
    free(c->out);
    c->out = NULL;
    c->out_cap = 0;
}

/* The link is closed (the worker died, or its code closed fd 3): the worker is
 * of no more use. SIGCHLD finishes the job. */
static void close_link(struct child *c)
{
    loop_del_file(c->loop, c->fd_event);
    close(c->fd);
    c->fd = -1;
    c->fd_event = 0;
    c->written += c->out_len;
    c->out_len = 0;
    shrink_out(c);
    c->reader.off = c->reader.len = 0;
    link_reader_shrink(&c->reader);
}

static int flush_out(struct child *c)
{
    while (c->out_len) {
        ssize_t n = write(c->fd, c->out, c->out_len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            return -errno;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
        c->written += (size_t)n;
    }
    shrink_out(c);
    /* Wait for the link to be writable only while something is waiting, and
     * readable only while the worker takes what is written to it. */
    loop_set_events(c->loop, c->fd_event,
                    (c->out_len < OUT_HIGH ? LOOP_READABLE : 0) |
                        (c->out_len ? LOOP_WRITABLE : 0));
    return 0;
}

static double on_trim(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct child *c = data;
    c->trim_timer = 0;
    link_reader_shrink(&c->reader);
    malloc_trim(0);
    return LOOP_NOMORE;
}

/* After a large frame, and once large frames stop coming: the reader's buffer
 * goes back, and so does what the allocator holds free (the frame's copy, its
 * parsed JSON, the message made of it). Not after each one: a page given back
 * costs a fault when it is used again (tens of microseconds on a virtual
 * machine), and a stream of large outputs would pay it for every byte, several
 * times over. The allocator keeps large blocks in its heap meanwhile
 * (supervisor.c). */
static void give_back(struct child *c, size_t largest)
{
    if (largest < TRIM_AFTER && c->reader.cap <= LINK_READER_KEEP)
        return;
    loop_del_timer(c->loop, c->trim_timer);
    long long id = loop_add_timer(c->loop, TRIM_IDLE_S, on_trim, c);
    c->trim_timer = id > 0 ? id : 0;
}

/* Hands the whole frames the reader holds to the callback, while the worker
 * takes what is written to it. 0, 1 when the handler stopped the link (maybe
 * started another), or the reader's error. */
static int route_frames(struct child *c, size_t *largest)
{
    struct link_frame f;
    int rc = 0;
    long long event = c->fd_event;
    while (c->out_len < OUT_HIGH && (rc = link_reader_next(&c->reader, &f)) == 1) {
        size_t size = f.json_len;
        for (size_t i = 0; i < f.nbuffers; i++)
            size += f.buffers[i].len;
        if (size > *largest)
            *largest = size;
        c->ev.frame(c->ev.data, &f);
        link_frame_release(&f);
        if (c->fd_event != event)
            return 1; /* stopped, maybe started again, by the frame's handler */
    }
    return rc < 0 ? rc : 0;
}

static void read_link(struct child *c)
{
    size_t largest = 0;
    int rc = route_frames(c, &largest); /* those held back while it did not read */
    for (int turn = 0; !rc && turn < READ_TURNS && c->fd >= 0 && c->out_len < OUT_HIGH;
         turn++) {
        ssize_t n = link_reader_fill(&c->reader, c->fd);
        if (n == -EAGAIN || n == -EINTR)
            break;
        if (n <= 0) {
            log_debug("the link to the worker closed (%s)",
                      n ? strerror((int)-n) : "EOF");
            close_link(c);
            c->link_closed = true;
            if (c->pid > 0)
                kill(c->pid, SIGKILL);
            return;
        }
        rc = route_frames(c, &largest);
    }
    if (rc < 0) {
        char what[160];
        if (rc == -EMSGSIZE)
            snprintf(what, sizeof what,
                     "sent a message of %zu bytes, more than the %zu bytes this "
                     "kernel accepts from it (its output limits and a margin)",
                     link_reader_pending_size(&c->reader), c->reader.max_frame);
        else
            snprintf(what, sizeof what, "sent a corrupt message");
        log_error("the worker %s; restarting it", what);
        c->ev.corrupt(c->ev.data, what);
    }
    give_back(c, largest);
}

static void on_link(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    struct child *c = data;
    if (events & LOOP_WRITABLE) {
        int rc = flush_out(c);
        if (rc)
            log_warn("cannot write to the worker: %s", strerror(-rc));
    }
    /* Frames held back while the worker was not reading are routed once it
     * has taken its answers, whether or not more have come. */
    if ((events & LOOP_READABLE) ||
        (c->fd >= 0 && c->out_len < OUT_HIGH && c->reader.len > c->reader.off))
        read_link(c);
}

/* Asks the template for the worker: the child's end of the link, of its log
 * and its group's cgroup.procs files (all borrowed). The pid, or 0 when the
 * template could not (the worker is then exec'd). */
static pid_t fork_from_template(struct worker_template *tpl, int link_fd, int log_fd,
                                const struct sandbox_cgroup *cg)
{
    int fds[SPAWN_MAX_FDS] = {link_fd, log_fd};
    size_t n = 2;
    for (int i = 0; i < SANDBOX_CGROUP_NCTL && n < SPAWN_MAX_FDS; i++)
        if (cg->procs[i] >= 0)
            fds[n++] = cg->procs[i];
    pid_t pid = 0;
    int rc = template_spawn(tpl, fds, n, cg->detail[0] ? cg->detail : "none", &pid);
    if (rc) {
        log_warn("the worker template gave no worker (%s); starting one without it",
                 strerror(-rc));
        return 0;
    }
    return pid;
}

/* The descriptors a new worker is given: its end of the link (sv[1]; sv[0] the
 * supervisor's), its log pipe (logp) and /dev/null. The descriptor of /dev/null with
 * all made, or -errno with none left open. Not inlined: its locals would become the
 * caller's, live across vfork, which the compiler rightly refuses (-Wclobbered). */
__attribute__((noinline)) static int open_worker_fds(int sv[2], int logp[2])
{
    if (pipe2(logp, O_CLOEXEC) < 0)
        return -errno;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        close(logp[0]);
        close(logp[1]);
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
        return -e;
    }
    return devnull;
}

/* In the vforked child: joins the group, puts the descriptors in place and execs
 * the worker. Never returns; only system calls on what was made before the fork. */
__attribute__((noreturn)) static void exec_worker(pid_t parent,
                                                  const struct sandbox_cgroup *cg,
                                                  int link_fd, int devnull, int log_fd,
                                                  char *const argv[], char **env)
{
    preexec_setup(parent);
    /* Before exec: nothing the worker runs is outside its group. If this fails,
     * the worker finds itself outside and says so in its report. */
    sandbox_cgroup_join(cg);
    if (dup2(link_fd, 3) < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
        dup2(log_fd, 2) < 0)
        _exit(WORKER_EXIT_EXEC);
    syscall(SYS_close_range, 4U, ~0U, 0U);
    execve(argv[0], argv, env);
    _exit(WORKER_EXIT_EXEC);
}

/* The worker's group, made with limits (NULL: none), its outcome logged. */
static void make_worker_group(struct child *c, const struct sandbox_cgroup_limits *limits,
                              struct sandbox_cgroup *cg)
{
    if (!limits)
        return;
    if (sandbox_cgroup_create(cg, ++c->started, limits) == 0)
        log_info("cgroup: %s", cg->detail);
    else
        log_warn("no cgroup for the worker: %s", cg->detail);
}

/* Starts a worker's process: forked from the template when it is ready, else
 * (unless template_only) exec'd. 0 with *p filled, or -errno. */
static int start_worker_process(struct child *c, char *const argv[], char *const envp[],
                                const struct sandbox_cgroup_limits *limits,
                                struct worker_template *tpl, bool template_only,
                                struct proc *p)
{
    int sv[2], logp[2];
    struct sandbox_cgroup *cg = &p->cgroup;
    sandbox_cgroup_init(cg);
    if (template_only && template_state(tpl) != TEMPLATE_READY)
        return -EAGAIN;
    make_worker_group(c, limits, cg);
    char **env = worker_env_with_cgroup(envp, cg->detail[0] ? cg->detail : "none");
    const int devnull = env ? open_worker_fds(sv, logp) : -ENOMEM;
    if (devnull < 0) {
        worker_env_free_with(env);
        sandbox_cgroup_remove(cg);
        sandbox_cgroup_release(cg);
        return devnull;
    }
    pid_t parent = getpid();
    pid_t pid = template_state(tpl) == TEMPLATE_READY
                    ? fork_from_template(tpl, sv[1], logp[1], cg)
                    : 0;
    if (!pid && template_only) {
        pid = -1;
        errno = EAGAIN;
    } else if (!pid) {
        /* vfork: this process waits for the child's exec, and the child runs at
         * once, on its page tables. A fork copied them and left the child
         * waiting for the other CPU (1 to 5 ms here), then paid a fault for
         * each page it touched. The child below only makes system calls, on
         * descriptors and values already made (preexec.c's too), and never
         * returns from this function: what a vforked child may do. */
        pid = vfork();
    }
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        close(devnull);
        close(logp[0]);
        close(logp[1]);
        worker_env_free_with(env);
        sandbox_cgroup_remove(cg);
        sandbox_cgroup_release(cg);
        return -e;
    }
    if (pid == 0)
        exec_worker(parent, cg, sv[1], devnull, logp[1], argv, env);
    worker_env_free_with(env);
    sandbox_cgroup_started(cg, pid);
    close(sv[1]);
    close(devnull);
    close(logp[1]);
    fcntl(logp[0], F_SETFL, fcntl(logp[0], F_GETFL) | O_NONBLOCK);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    p->pid = pid;
    p->fd = sv[0];
    worker_logpipe_open(&p->log, c->loop, logp[0]);
    return 0;
}

/* The process becomes the running worker: its link and log are watched from
 * now on (a spare's hello has waited on its link until then). */
static void adopt(struct child *c, struct proc *p)
{
    worker_logpipe_move(&c->log, &p->log);
    c->cgroup = p->cgroup;
    sandbox_cgroup_init(&p->cgroup);
    c->pid = p->pid;
    c->fd = p->fd;
    c->state = CHILD_STARTING;
    c->started_at = monotime_now();
    c->link_closed = false;
    c->written += c->out_len;
    c->out_len = 0;
    c->reader.off = c->reader.len = 0;
    p->pid = 0;
    p->fd = -1;
    long long fid =
        loop_add_fd(c->loop, c->fd, LOOP_READABLE, LOOP_RANK_WORKER_LINK, on_link, c);
    c->fd_event = fid > 0 ? fid : 0;
    if (fid <= 0)
        log_error("cannot watch the link to the worker: %s", strerror((int)-fid));
}

/* Ends every process of a stopped worker, not only the worker: those its preloads
 * forked before its filter, whether they kept to its process group or not. The
 * group's when it has one; else every descendant of the supervisor but the template,
 * the other worker (other, 0 for none) and their own. */
static void end_processes(const struct child *c, const struct sandbox_cgroup *cg,
                          pid_t other)
{
    if (cg->version && sandbox_stop_group(cg) >= 0)
        return;
    const pid_t keep[2] = {c->template_pid, other};
    int rc = sandbox_stop_tree(getpid(), keep, 2);
    if (rc < 0)
        log_warn("cannot end the stopped worker's processes: %s", strerror(-rc));
    else if (rc > 0)
        log_debug("ended %d processes of the stopped worker's tree", rc);
}

/* Kills the spare and lets its group go with the stopped workers'. */
static void drop_spare(struct child *c, bool reaped)
{
    struct proc *p = &c->spare;
    if (!p->pid)
        return;
    if (!reaped)
        kill(p->pid, SIGKILL);
    end_processes(c, &p->cgroup, c->pid);
    close(p->fd);
    worker_logpipe_close(&p->log);
    retire_group(c, &p->cgroup);
    p->pid = 0;
    p->fd = -1;
}

int child_start(struct child *c, char *const argv[], char *const envp[],
                const struct sandbox_cgroup_limits *limits, struct worker_template *tpl)
{
    if (tpl)
        c->template_pid = template_pid(tpl);
    if (c->spare.pid) {
        log_info("worker %d, started beforehand, takes over", (int)c->spare.pid);
        adopt(c, &c->spare);
        return 0;
    }
    struct proc p = {.fd = -1, .log.fd = -1};
    int rc = start_worker_process(c, argv, envp, limits, tpl, false, &p);
    if (rc)
        return rc;
    log_info("started worker %d", (int)p.pid);
    adopt(c, &p); /* before the loop runs: p's log event is moved to c's */
    return 0;
}

int child_start_spare(struct child *c, char *const argv[], char *const envp[],
                      const struct sandbox_cgroup_limits *limits,
                      struct worker_template *tpl)
{
    if (tpl)
        c->template_pid = template_pid(tpl);
    if (c->spare.pid)
        return 0;
    int rc = start_worker_process(c, argv, envp, limits, tpl, true, &c->spare);
    if (rc) {
        c->spare.pid = 0;
        return rc;
    }
    log_debug("started worker %d beforehand, for the next restart", (int)c->spare.pid);
    return 0;
}

void child_stop_spare(struct child *c)
{
    drop_spare(c, false);
}

void child_end_all(struct child *c)
{
    (void)c;
    int rc = sandbox_stop_tree(getpid(), NULL, 0);
    if (rc > 0)
        log_info("ended %d processes left below the kernel", rc);
}

bool child_spare_reaped(struct child *c, pid_t pid, int status)
{
    if (!c->spare.pid || c->spare.pid != pid)
        return false;
    log_warn("worker %d, started beforehand, ended before it was needed", (int)pid);
    /* No cell has run in it: a status it exited with is one of sandpit's. */
    if (WIFEXITED(status)) {
        char how[160];
        worker_exit_describe(WEXITSTATUS(status), true, how, sizeof how);
        log_warn("worker %d %s", (int)pid, how);
    }
    drop_spare(c, true);
    return true;
}

void child_set_frame_limit(struct child *c, size_t max)
{
    link_reader_set_max(&c->reader, max);
}

void child_exited(struct child *c)
{
    c->pid = 0;
    child_stop(c);
}

void child_stop(struct child *c)
{
    if (c->pid > 0)
        kill(c->pid, SIGKILL);
    end_processes(c, &c->cgroup, c->spare.pid);
    retire_group(c, &c->cgroup);
    if (c->fd >= 0)
        close_link(c);
    c->pid = 0;
    c->state = CHILD_DOWN;
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
    c->queued += flen;
    free(frame);
    return flush_out(c);
}

void child_signal(struct child *c, int sig)
{
    if (c->pid > 0)
        kill(c->pid, sig);
}

enum child_state child_state(const struct child *c)
{
    return c->state;
}

void child_set_ready(struct child *c)
{
    if (c->state == CHILD_STARTING)
        c->state = CHILD_READY;
}

pid_t child_pid(const struct child *c)
{
    return c->pid;
}

double child_age(const struct child *c)
{
    return monotime_now() - c->started_at;
}

double child_cpu_seconds(const struct child *c)
{
    return proc_stat_cpu_seconds(c->pid);
}

unsigned long long child_queued(const struct child *c)
{
    return c->queued;
}

unsigned long long child_written(const struct child *c)
{
    return c->written;
}

bool child_link_closed(const struct child *c)
{
    return c->link_closed;
}
