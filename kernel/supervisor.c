/* supervisor: the kernel process that the client talks to.
 *
 * The path of one cell, and where each step lives:
 *
 *   zmq frames --recv_frames--> msg_parse (wire_split, sign_verify)       protocol/
 *     --> dispatch_msg: by channel and msg_type; status busy              dispatch.c
 *     --> kernel_send_worker --> child_send: the request on the link      child.c
 *     --> worker: py_execute, streams, displays, result                   worker.c,
 * pyrt.c
 *     --> dispatch_worker_frame: events back from the link                dispatch.c
 *     --> kernel_publish / kernel_reply: msg_make, msg_serialize, send    here
 *     --> status idle                                                     dispatch.c
 *
 * The supervisor never runs user code and never blocks: every socket is read
 * without waiting, every send is ZMQ_DONTWAIT (a slow client loses iopub
 * messages at the high-water mark rather than stalling the kernel), and the
 * link to the worker is written from a buffer when it is writable. Signals
 * arrive on a signalfd, so a SIGINT or SIGCHLD is one more event in the loop.
 * Everything the worker does that could go wrong (dying, hanging, flooding)
 * is an event here, answered with an error on the request that was running. */
#include "kernel/supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/kernel.h"
#include "kernel/log.h"

#define START_TIMEOUT_S 60.0 /* a worker that has not said hello by then is stuck */
#define MAX_FRAMES      1024 /* frames in one ZeroMQ message */
#define DRAIN_BATCH     256  /* messages read from one socket per loop turn */

double kernel_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- sockets ------------------------------------------------------------------ */

static const int socket_types[CONNECTION_NCHANNELS] = {
    [CONNECTION_SHELL] = ZMQ_ROUTER, [CONNECTION_IOPUB] = ZMQ_XPUB,
    [CONNECTION_STDIN] = ZMQ_ROUTER, [CONNECTION_CONTROL] = ZMQ_ROUTER,
    [CONNECTION_HB] = ZMQ_ROUTER,
};

static int open_sockets(struct kernel *k)
{
    k->zctx = zmq_ctx_new();
    if (!k->zctx)
        return -errno;
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        void *s = zmq_socket(k->zctx, socket_types[ch]);
        if (!s)
            return -errno;
        k->sockets[ch] = s;
        int linger = 1000, one = 1;
        /* ZeroMQ checks each frame as it arrives, and drops the peer of one that is
         * too large before it is read; recv_frames checks the frames together. */
        int64_t maxmsg =
            k->opts->max_message_mib ? (int64_t)k->opts->max_message_mib << 20 : -1;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
        if (strchr(k->conn.ip, ':'))
            zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one);
        if (ch == CONNECTION_IOPUB) /* every subscription, so each gets a welcome */
            zmq_setsockopt(s, ZMQ_XPUB_VERBOSE, &one, sizeof one);
        char ep[PATH_MAX + 32];
        if (connection_endpoint(&k->conn, ch, ep, sizeof ep) < 0) {
            log_error("the %s endpoint is too long", connection_channel_name(ch));
            return -ENAMETOOLONG;
        }
        if (zmq_bind(s, ep) != 0) {
            int e = errno;
            log_error(
                "cannot bind the %s port %d on %s: %s (is another kernel using it?)",
                connection_channel_name(ch), k->conn.ports[ch], k->conn.ip,
                zmq_strerror(e));
            return -e;
        }
        log_debug("%s bound on %s", connection_channel_name(ch), ep);
    }
    return 0;
}

static void close_sockets(struct kernel *k)
{
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        if (k->sockets[ch])
            zmq_close(k->sockets[ch]);
    if (k->zctx)
        zmq_ctx_term(k->zctx);
}

/* Reads one multipart message without waiting. Returns the number of frames
 * (> 0, *frames is new), -EAGAIN when there is none, -EMSGSIZE when it had
 * too many frames or more than max bytes (0: no limit) (it was read and
 * discarded, and nothing past the limit was copied), or -errno. */
static int recv_frames(void *sock, struct wire_frame **frames, size_t max)
{
    *frames = NULL;
    struct wire_frame *f = NULL;
    int n = 0, more = 1, rc = 0;
    size_t total = 0;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, n ? 0 : ZMQ_DONTWAIT) < 0) {
            rc = -errno;
            zmq_msg_close(&part);
            if (n == 0 && rc == -EAGAIN)
                return rc;
            break;
        }
        more = zmq_msg_more(&part);
        total += zmq_msg_size(&part);
        if (max && total > max)
            rc = -EMSGSIZE;
        if (rc == 0 && n < MAX_FRAMES) {
            struct wire_frame *nf = realloc(f, (size_t)(n + 1) * sizeof *nf);
            size_t len = zmq_msg_size(&part);
            void *data = nf ? malloc(len ? len : 1) : NULL;
            if (!nf || !data) {
                free(data);
                if (nf)
                    f = nf;
                rc = -ENOMEM;
            } else {
                f = nf;
                memcpy(data, zmq_msg_data(&part), len);
                f[n].data = data;
                f[n].len = len;
                n++;
            }
        } else if (rc == 0) {
            rc = -EMSGSIZE;
        }
        zmq_msg_close(&part);
    }
    if (rc) {
        wire_frames_free(f, (size_t)n);
        return rc;
    }
    *frames = f;
    return n;
}

int kernel_send(struct kernel *k, enum connection_channel ch, const struct msg *m)
{
    struct wire_frame *frames;
    size_t n;
    int rc = msg_serialize(m, &k->sign, &frames, &n);
    if (rc) {
        log_error("cannot serialise a %s message: %s", msg_type(m), strerror(-rc));
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        if (zmq_send(k->sockets[ch], frames[i].data, frames[i].len, flags) < 0) {
            rc = -errno;
            /* A full pipe drops the message: that is the price of never blocking. */
            log_warn("dropped a %s message on %s: %s", msg_type(m),
                     connection_channel_name(ch), zmq_strerror(-rc));
            break;
        }
    }
    wire_frames_free(frames, n);
    return rc;
}

void kernel_reply(struct kernel *k, const struct request *req, const char *type,
                  json_t **content, json_t *metadata)
{
    struct msg *m = msg_make(&k->session, type, req->msg, content, true);
    if (!m) {
        json_decref(metadata);
        log_error("out of memory making a %s", type);
        return;
    }
    if (metadata) {
        json_decref(m->metadata);
        m->metadata = metadata;
    }
    kernel_send(k, req->channel, m);
    msg_free(m);
}

void kernel_publish(struct kernel *k, const json_t *parent_header, const char *type,
                    json_t **content)
{
    struct msg *m = msg_make(&k->session, type, NULL, content, false);
    if (!m) {
        log_error("out of memory making a %s", type);
        return;
    }
    if (parent_header) {
        json_decref(m->parent_header);
        m->parent_header = json_deep_copy(parent_header);
        if (!m->parent_header)
            m->parent_header = json_object();
    }
    char topic[160];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session.session, type);
    msg_add_ident(m, topic, strlen(topic));
    kernel_send(k, CONNECTION_IOPUB, m);
    msg_free(m);
}

void kernel_publish_status(struct kernel *k, const struct request *req, const char *state)
{
    json_t *content = json_pack("{s:s}", "execution_state", state);
    kernel_publish(k, req ? req->msg->header : NULL, "status", &content);
}

int kernel_send_worker(struct kernel *k, const json_t *obj,
                       const struct msg *with_buffers)
{
    char *text = json_dumps(obj, JSON_COMPACT);
    if (!text)
        return -ENOMEM;
    int rc = child_send(&k->child, text, strlen(text),
                        with_buffers ? with_buffers->buffers : NULL,
                        with_buffers ? with_buffers->nbuffers : 0);
    free(text);
    if (rc)
        log_warn("cannot write to the worker: %s", strerror(-rc));
    return rc;
}

/* --- the worker's life ----------------------------------------------------------- */

static char **worker_argv(struct kernel *k)
{
    char **argv = NULL;
    int argc = 0;
    const char *fixed[] = {"sandpit", "worker"};
    for (size_t i = 0; i < 2; i++) {
        char **na = realloc(argv, (size_t)(argc + 2) * sizeof *na);
        if (!na)
            goto fail;
        argv = na;
        if (!(argv[argc++] = strdup(fixed[i])))
            goto fail;
        argv[argc] = NULL;
    }
    if ((argc = options_to_argv(k->opts, &argv, argc)) < 0)
        goto fail;
    return argv;
fail:
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
    return NULL;
}

static void start_worker(struct kernel *k)
{
    k->restart_at = 0;
    char **argv = worker_argv(k);
    if (!argv) {
        log_error("out of memory starting the worker");
        k->restart_at = kernel_now() + 1;
        return;
    }
    if (!k->worker_env)
        k->worker_env = child_environment(k->opts->sandbox, k->opts->pass_env);
    struct sandbox_cgroup_limits limits = {(uint64_t)k->opts->memory_mib << 20,
                                           SANDBOX_MAX_TASKS, k->opts->cpus};
    int rc = k->worker_env ? child_start(&k->child, argv, k->worker_env,
                                         k->opts->sandbox ? &limits : NULL)
                           : -ENOMEM;
    for (int i = 0; argv[i]; i++)
        free(argv[i]);
    free(argv);
    if (rc) {
        log_error("cannot start the worker: %s", strerror(-rc));
        k->restart_at = kernel_now() + 1;
    }
}

void kernel_restart_worker(struct kernel *k, const char *why)
{
    dispatch_worker_lost(k, why);
    child_stop(&k->child);
    start_worker(k);
}

static void describe_exit(const struct child *c, int status, char *buf, size_t len)
{
    /* The link closes when the worker dies, before its status is known: the
     * supervisor's own SIGKILL after that says nothing, the status does. */
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && child_memory_killed(c))
        snprintf(buf, len,
                 "ran out of memory (its limit counts shared memory and files "
                 "in memory too) and was stopped");
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && c->link_closed)
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
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* The worker process is gone (reaped). Answer what it was running, then start
 * another, at once unless workers keep dying before they are ready. */
static void worker_gone(struct kernel *k, int status)
{
    char how[128], why[512];
    describe_exit(&k->child, status, how, sizeof how);
    bool was_starting = k->child.state == CHILD_STARTING;
    log_warn("the worker %s", how);
    child_stop(&k->child);
    snprintf(why, sizeof why,
             "The worker process running this cell %s. It has been restarted: "
             "variables and imports from earlier cells are lost.",
             how);
    dispatch_worker_lost(k, why);
    if (was_starting) {
        k->start_failures++;
        if (k->start_failures >= 3) {
            double delay = k->start_failures >= 8 ? 30 : 1 << (k->start_failures - 3);
            log_error(
                "the worker failed to start %d times in a row; trying again in %.0f s",
                k->start_failures, delay);
            k->restart_at = kernel_now() + delay;
            dispatch_pump(k); /* answers queued requests with an error */
            return;
        }
    }
    start_worker(k);
}

static void reap_children(struct kernel *k)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == k->child.pid)
            worker_gone(k, status);
        child_reaped(&k->child);
    }
}

static void read_worker(struct kernel *k)
{
    for (int turn = 0; turn < 64 && k->child.fd >= 0; turn++) {
        ssize_t n = link_reader_fill(&k->child.reader, k->child.fd);
        if (n == -EAGAIN || n == -EINTR)
            break;
        if (n <= 0) {
            /* The link is closed (the worker died, or its code closed fd 3): the
             * worker is of no more use. SIGCHLD finishes the job. */
            log_debug("the link to the worker closed (%s)",
                      n ? strerror((int)-n) : "EOF");
            close(k->child.fd);
            k->child.fd = -1;
            k->child.link_closed = true;
            if (k->child.pid > 0)
                kill(k->child.pid, SIGKILL);
            return;
        }
        struct link_frame f;
        int rc;
        while ((rc = link_reader_next(&k->child.reader, &f)) == 1) {
            dispatch_worker_frame(k, &f);
            link_frame_release(&f);
            if (k->child.fd < 0)
                return;
        }
        if (rc < 0) {
            log_error("the worker sent a corrupt frame; restarting it");
            kernel_restart_worker(k,
                                  "The worker sent a corrupt message and was restarted: "
                                  "variables and imports from earlier cells are lost.");
            return;
        }
    }
}

/* --- control of time ------------------------------------------------------------ */

static void check_timers(struct kernel *k)
{
    double now = kernel_now();
    if (k->restart_at && now >= k->restart_at && k->child.state == CHILD_DOWN)
        start_worker(k);
    if (k->child.state == CHILD_STARTING && now - k->child.started_at > START_TIMEOUT_S) {
        log_error("the worker did not start within %.0f s; restarting it",
                  START_TIMEOUT_S);
        k->start_failures++;
        child_stop(&k->child);
        start_worker(k);
    }
    dispatch_check_timers(k, now);
}

static int poll_timeout_ms(struct kernel *k)
{
    double next = dispatch_next_deadline(k), now = kernel_now();
    if (k->restart_at && (!next || k->restart_at < next))
        next = k->restart_at;
    if (k->child.state == CHILD_STARTING &&
        (!next || k->child.started_at + START_TIMEOUT_S < next))
        next = k->child.started_at + START_TIMEOUT_S;
    double cap = k->watch_parent ? 1000 : 60000; /* see check_parent */
    if (!next)
        return k->watch_parent ? (int)cap : -1;
    double ms = (next - now) * 1000 + 1;
    return ms < 0 ? 0 : ms > cap ? (int)cap : (int)ms;
}

/* A kernel started by a Jupyter client (which sets JPY_PARENT_PID) ends when
 * that client dies without shutting it down, as ipykernel does: otherwise a
 * killed notebook server or console leaves kernels running for ever. */
static void check_parent(struct kernel *k)
{
    if (k->watch_parent && getppid() != k->parent_pid) {
        log_warn("the client that started this kernel has gone; shutting down");
        k->running = false;
    }
}

/* --- the loop ------------------------------------------------------------------- */

static void handle_signal(struct kernel *k)
{
    struct signalfd_siginfo si;
    while (read(k->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        switch (si.ssi_signo) {
        case SIGCHLD:
            reap_children(k);
            break;
        case SIGINT:
            kernel_interrupt(k, "SIGINT");
            break;
        default:
            log_info("%s: shutting down", strsignal((int)si.ssi_signo));
            k->running = false;
            break;
        }
    }
}

static void read_channel(struct kernel *k, enum connection_channel ch)
{
    for (int i = 0; i < DRAIN_BATCH; i++) {
        struct wire_frame *frames;
        int n =
            recv_frames(k->sockets[ch], &frames, (size_t)k->opts->max_message_mib << 20);
        if (n == -EAGAIN)
            return;
        if (n < 0) {
            log_warn("dropped a message on %s: %s", connection_channel_name(ch),
                     n == -EMSGSIZE ? "too many frames, or larger than --max-message"
                                    : strerror(-n));
            continue;
        }
        if (ch == CONNECTION_HB) {
            for (int j = 0; j < n; j++)
                zmq_send(k->sockets[ch], frames[j].data, frames[j].len,
                         ZMQ_DONTWAIT | (j + 1 < n ? ZMQ_SNDMORE : 0));
        } else if (ch == CONNECTION_IOPUB) {
            /* A subscription (first byte 1) from a new client: greet it, so it
             * knows its subscription is live before it sends anything. */
            const unsigned char *d = frames[0].data;
            if (n == 1 && frames[0].len >= 1 && d[0] == 1) {
                json_t *c = json_pack("{s:s%}", "subscription", (const char *)d + 1,
                                      frames[0].len - 1);
                if (c)
                    kernel_publish(k, NULL, "iopub_welcome", &c);
            }
        } else {
            struct msg *m = NULL;
            char err[256];
            int rc = msg_parse(frames, (size_t)n, &k->sign, &m, err, sizeof err);
            if (rc == -EPROTO) {
                log_warn("an unreadable message on %s: %s", connection_channel_name(ch),
                         err);
                dispatch_unreadable(k, m, ch, err);
            } else if (rc) {
                log_warn("dropped a message on %s: %s", connection_channel_name(ch), err);
            } else if (ch == CONNECTION_STDIN) {
                dispatch_stdin(k, &m);
            } else {
                dispatch_msg(k, &m, ch);
            }
            msg_free(m);
        }
        wire_frames_free(frames, (size_t)n);
        if (!k->running)
            return;
    }
}

static void remove_tree(const char *path);

/* Private folders are named sandpit-<pid>-XXXXXX. A kernel killed outright
 * (SIGKILL, a crash) cannot remove its own: the next kernel removes those of
 * this user whose process is gone. */
static void remove_stale_tmpdirs(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "sandpit-", 8) != 0)
            continue;
        long pid = strtol(e->d_name + 8, &end, 10);
        if (end == e->d_name + 8 || *end != '-' || pid <= 1)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to know */
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= (int)sizeof path ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        log_info("removing %s, left by a kernel that ended without cleaning up", path);
        remove_tree(path);
    }
    closedir(d);
}

static int make_tmpdir(struct kernel *k)
{
    const char *env = getenv("TMPDIR");
    const char *base = env && *env == '/' ? env : "/tmp";
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sandpit-%d-XXXXXX", base, (int)getpid());
    if (!mkdtemp(path)) {
        base = "/tmp";
        snprintf(path, sizeof path, "%s/sandpit-%d-XXXXXX", base, (int)getpid());
        if (!mkdtemp(path))
            return -errno;
    }
    remove_stale_tmpdirs(base);
    k->tmpdir = strdup(path);
    return k->tmpdir ? 0 : -ENOMEM;
}

/* --- matplotlib's font cache -------------------------------------------------------
 * A worker's matplotlib writes its font list into the private temporary folder,
 * which goes with the kernel; building it again costs a third of a second at
 * every first chart. The supervisor keeps the file in the user's cache folder
 * (~/.cache/sandpit/matplotlib): copied in when the folder is made, copied back
 * (if there is none yet) when the kernel ends. It is written by sandboxed code,
 * so only a modest regular file named like matplotlib's is taken, and a stale
 * or damaged one costs nothing: matplotlib checks its version and rebuilds. */

#define FONT_CACHE_MAX (4u << 20)

static int font_cache_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg == '/')
        n = snprintf(buf, len, "%s/sandpit/matplotlib", xdg);
    else if (home && *home == '/')
        n = snprintf(buf, len, "%s/.cache/sandpit/matplotlib", home);
    else
        return -ENOENT;
    return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static bool font_cache_name(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "fontlist-", 9) == 0 && n > 14 && n < 64 &&
           strcmp(name + n - 5, ".json") == 0 && !strchr(name, '/');
}

/* Copies the regular file name in from_dir (not a symbolic link: the folder
 * is the sandboxed code's to change), of at most FONT_CACHE_MAX bytes, into
 * dir, through a temporary name and a rename, so a reader never sees half a
 * file. */
static void copy_small_file(int from_dir, const char *name, const char *dir)
{
    char to[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(to, sizeof to, "%s/%s", dir, name) >= (int)sizeof to ||
        snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid()) >=
            (int)sizeof tmp)
        return;
    int in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return;
    struct stat st;
    char *buf = NULL;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size > FONT_CACHE_MAX || !(buf = malloc((size_t)st.st_size)) ||
        read(in, buf, (size_t)st.st_size) != st.st_size) {
        free(buf);
        close(in);
        return;
    }
    close(in);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out >= 0) {
        bool ok = write(out, buf, (size_t)st.st_size) == st.st_size;
        ok &= close(out) == 0;
        if (!ok || rename(tmp, to) != 0)
            unlink(tmp);
    }
    free(buf);
}

static void copy_font_cache(const char *from_dir, const char *to_dir, bool only_new)
{
    int dfd = open(from_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!font_cache_name(e->d_name))
            continue;
        char existing[PATH_MAX];
        if (snprintf(existing, sizeof existing, "%s/%s", to_dir, e->d_name) >=
            (int)sizeof existing)
            continue;
        if (only_new && access(existing, F_OK) == 0)
            continue;
        copy_small_file(dfd, e->d_name, to_dir);
    }
    closedir(d);
}

static void font_cache_in(struct kernel *k)
{
    char cache[PATH_MAX], mine[PATH_MAX];
    if (font_cache_dir(cache, sizeof cache) != 0 ||
        snprintf(mine, sizeof mine, "%s/matplotlib", k->tmpdir) >= (int)sizeof mine ||
        mkdir(mine, 0700) != 0)
        return;
    copy_font_cache(cache, mine, false);
}

static void font_cache_out(struct kernel *k)
{
    char cache[PATH_MAX], mine[PATH_MAX];
    if (font_cache_dir(cache, sizeof cache) != 0 ||
        snprintf(mine, sizeof mine, "%s/matplotlib", k->tmpdir) >= (int)sizeof mine)
        return;
    /* mkdir -p of the cache folder, owner only */
    for (char *p = cache + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        mkdir(cache, 0700);
        *p = '/';
    }
    mkdir(cache, 0700);
    copy_font_cache(mine, cache, true);
}

/* Removes the tree we made, without following symbolic links out of it. */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[PATH_MAX];
            if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
                continue;
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static int kernel_init(struct kernel *k, struct options *opts)
{
    memset(k, 0, sizeof *k);
    k->opts = opts;
    k->sigfd = -1;
    k->running = true;
    child_init(&k->child);
    history_init(&k->history, 0);
    dispatch_init(k);
    const char *jpy = getenv("JPY_PARENT_PID");
    k->parent_pid = getppid();
    k->watch_parent = jpy && atoi(jpy) > 1 && k->parent_pid > 1;
    snprintf(k->python_version, sizeof k->python_version, "%s", SANDPIT_PY_VERSION);

    char err[512];
    int rc = connection_load(&k->conn, opts->connection_file, err, sizeof err);
    if (rc) {
        log_error("%s", err);
        return rc;
    }
    if ((rc = sign_init(&k->sign, k->conn.signature_scheme, k->conn.key,
                        k->conn.key_len))) {
        log_error("cannot set up message signing: %s", strerror(-rc));
        return rc;
    }
    if (!k->sign.enabled)
        log_warn("the connection file has an empty key: messages are not signed");
    /* The key now lives in OpenSSL's context; the copy in the file's struct goes. */
    memset(k->conn.key, 0, k->conn.key_len);

    const char *user = getenv("USER");
    struct passwd *pw = getpwuid(getuid());
    if ((rc = msg_session_init(&k->session, user ? user : pw ? pw->pw_name : "kernel")))
        return rc;

    char cwd[PATH_MAX];
    const char *ws = opts->workspace;
    if (!ws && !(ws = getcwd(cwd, sizeof cwd)))
        return -errno;
    char real[PATH_MAX];
    if (!realpath(ws, real)) {
        rc = -errno;
        log_error("the workspace %s cannot be used: %s", ws, strerror(errno));
        return rc;
    }
    free(opts->workspace);
    opts->workspace = k->workspace = strdup(real);
    if ((rc = make_tmpdir(k))) {
        log_error("cannot make a private temporary folder: %s", strerror(-rc));
        return rc;
    }
    font_cache_in(k);
    free(opts->tmpdir);
    opts->tmpdir = strdup(k->tmpdir);
    char conn_real[PATH_MAX];
    if (realpath(opts->connection_file, conn_real)) {
        free(opts->hide);
        opts->hide = strdup(conn_real);
    }
    if (!k->workspace || !opts->tmpdir)
        return -ENOMEM;

    /* Signals become events on a descriptor. Blocked before ZeroMQ makes its
     * threads, so they inherit the mask and none of them takes a signal. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    k->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (k->sigfd < 0)
        return -errno;
    return open_sockets(k);
}

static void kernel_release(struct kernel *k)
{
    child_stop(&k->child);
    /* Reap the last worker so that it is not left a zombie for our parent, and
     * so that its cgroup can go (a large one takes a moment to tear down). */
    for (int i = 0; i < 2000 && waitpid(-1, NULL, WNOHANG) >= 0; i++)
        usleep(1000);
    child_release(&k->child);
    dispatch_release(k);
    child_free_environment(k->worker_env);
    json_decref(k->sandbox_report);
    history_release(&k->history);
    close_sockets(k);
    sign_release(&k->sign);
    connection_release(&k->conn);
    if (k->sigfd >= 0)
        close(k->sigfd);
    if (k->tmpdir) {
        font_cache_out(k);
        remove_tree(k->tmpdir);
    }
    free(k->tmpdir);
}

int supervisor_run(struct options *opts)
{
    struct kernel k;
    int rc = kernel_init(&k, opts);
    if (rc) {
        kernel_release(&k);
        return 1;
    }
    log_info("kernel %s listening on %s (%s), workspace %s", k.session.session, k.conn.ip,
             k.conn.transport, k.workspace);
    start_worker(&k);

    /* The items: the five sockets, the signalfd, the link to the worker, the
     * worker's log (poll ignores a descriptor of -1). */
    enum { SIG_ITEM = CONNECTION_NCHANNELS, LINK_ITEM, LOG_ITEM, N_ITEMS };
    /* Control first: an interrupt or a shutdown must not wait behind the shell. */
    static const enum connection_channel order[CONNECTION_NCHANNELS] = {
        CONNECTION_CONTROL, CONNECTION_HB, CONNECTION_STDIN, CONNECTION_IOPUB,
        CONNECTION_SHELL};
    while (k.running) {
        zmq_pollitem_t items[N_ITEMS];
        memset(items, 0, sizeof items);
        for (int i = 0; i < CONNECTION_NCHANNELS; i++) {
            items[i].socket = k.sockets[order[i]];
            items[i].events = ZMQ_POLLIN;
        }
        items[SIG_ITEM].fd = k.sigfd;
        items[SIG_ITEM].events = ZMQ_POLLIN;
        items[LINK_ITEM].fd = k.child.fd;
        items[LINK_ITEM].events =
            (short)(ZMQ_POLLIN | (child_has_pending(&k.child) ? ZMQ_POLLOUT : 0));
        items[LOG_ITEM].fd = k.child.log_fd;
        items[LOG_ITEM].events = ZMQ_POLLIN;
        int n = zmq_poll(items, N_ITEMS, poll_timeout_ms(&k));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("zmq_poll: %s", zmq_strerror(errno));
            break;
        }
        if (items[SIG_ITEM].revents & ZMQ_POLLIN)
            handle_signal(&k);
        if (k.child.log_fd >= 0 && (items[LOG_ITEM].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
            child_read_log(&k.child);
        for (int i = 0; i < CONNECTION_NCHANNELS && k.running; i++) {
            if (items[i].revents & ZMQ_POLLIN)
                read_channel(&k, order[i]);
            /* Events from the worker come in between, so a running cell's output
             * is not held back by a burst of requests. */
            if (i == 0 && k.child.fd >= 0 && k.child.fd == items[LINK_ITEM].fd &&
                (items[LINK_ITEM].revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
                read_worker(&k);
        }
        if (k.child.fd >= 0 && child_has_pending(&k.child)) {
            int wrc = child_flush(&k.child);
            if (wrc)
                log_warn("cannot write to the worker: %s", strerror(-wrc));
        }
        check_timers(&k);
        check_parent(&k);
        dispatch_pump(&k);
    }
    int status = k.exit_status;
    kernel_release(&k);
    log_info("kernel stopped");
    return status;
}
