/* supervisor: `sandpit kernel`, the process that a Jupyter client talks to.
 * This file sets everything up, wires it together and runs the loop; a reader
 * who follows one execute_request goes down the files in this order:
 *
 *   loop.c        loop_run: poll; the shell socket is readable
 *   channels.c    channels_drain: zrecv_read, msg_parse (wire_split,
 *                 sign_verify: protocol/), then the sink below
 *   dispatch.c    dispatch_msg: the table says the worker answers it
 *   shells.c      shells_submit: queued in its shell; shells_pump then
 *                 start_request: busy, execute_input, the request on the link
 *   limits.c      limits_start: its time limit starts to run
 *   link/         link_request_build (frames.c), then here io_to_worker and
 *                 worker_process.c child_send: written to the link (link.c link_encode)
 *   worker/       worker_main, pyrt_serve: the cell runs; pump.c and
 *                 uplink.c send its output and its reply up the link
 *   worker_process.c on_link, read_link: the worker's frames, one by one
 *   route.c       route_frame: link_decode, link_reply_parse (frames.c);
 *                 output to iopub (outbox.c), the reply to shells_finish
 *                 (shells.c): the reply, then idle
 *   outbox.c      outbox_reply, outbox_idle; channels.c channels_send
 *
 * The supervisor never runs user code and never waits for a client or the
 * worker: every socket is read without waiting, every send is ZMQ_DONTWAIT,
 * and the link to the worker is written from a buffer when it is writable.
 * Signals arrive on a signalfd, so a SIGINT or SIGCHLD is one more event in
 * the loop. It waits in three places of its own, each bounded: for the worker
 * template's answer when it forks a worker, at most 1 s (worker_template.c; it comes
 * in a fork's time, and a slower template is taken down); for the history's
 * SQLite file while another kernel writes to it, at most 10 ms at a time while
 * the loop runs, and 1 s a statement at the start, at a restart in place and
 * at the end (history.c); and, once the loop has ended, for the last worker's
 * exit, up to 2 s (supervisor_release). Everything the worker does that
 * could go wrong (dying, hanging, flooding) is an event here, answered with an
 * error on the request that was running. A kernel started by
 * Jupyter Enterprise Gateway (kernel/cmd/launcher.c) reports its ports once they are
 * bound, and serves the gateway's communication port (commport.c) in the loop. */
#include "kernel/supervisor/supervisor.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/link/frames.h"
#include "kernel/util/log.h"
#include "kernel/mem/prefault.h"
#include "kernel/supervisor/channels.h"
#include "kernel/supervisor/worker_process.h"
#include "kernel/supervisor/commport.h"
#include "kernel/supervisor/idle.h"
#include "kernel/supervisor/dispatch.h"
#include "kernel/supervisor/font_cache.h"
#include "kernel/supervisor/kernel.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/worker_lifecycle.h"
#include "kernel/supervisor/route.h"
#include "kernel/supervisor/shells.h"
#include "kernel/supervisor/tmpdir.h"

#define PARENT_CHECK_S 1.0 /* how often to look for the client that started us */

struct supervisor;

/* What a socket's file event carries: which channel it is. */
struct socket_event {
    struct supervisor *s;
    enum connection_channel ch;
};

struct supervisor {
    struct options *opts;
    struct connection conn;
    struct sign sign;
    struct channels channels;
    struct loop *loop;
    struct socket_event socket_events[CONNECTION_NCHANNELS];
    int sigfd;
    struct child *child;
    struct respawn respawn;
    struct kernel k;
    char *tmpdir;              /* the private temporary folder we made; removed at exit */
    pid_t parent_pid;          /* the process that started the kernel */
    struct launcher *gateway;  /* borrowed; NULL unless started by Enterprise Gateway */
    struct commport *commport; /* the gateway's communication port */
    struct idle idle;          /* --idle-timeout, and the activity file */
};

/* --- the kernel's view of the world (kernel_io) ------------------------------- */

static int io_send(void *ctx, enum connection_channel ch, const struct msg *m)
{
    struct supervisor *s = ctx;
    return channels_send(&s->channels, ch, m);
}

static int io_to_worker(void *ctx, const json_t *frame, const struct msg *buffers)
{
    struct supervisor *s = ctx;
    char *text = link_encode_text(frame);
    if (!text)
        return -ENOMEM;
    int rc = child_send(s->child, text, strlen(text), buffers ? buffers->buffers : NULL,
                        buffers ? buffers->nbuffers : 0);
    free(text);
    if (rc)
        log_warn("cannot write to the worker: %s", strerror(-rc));
    return rc;
}

static bool io_client_present(void *ctx, enum connection_channel ch, const struct msg *m)
{
    struct supervisor *s = ctx;
    return !m->nidents || channels_peer_present(&s->channels, ch, &m->idents[0]);
}

static void io_signal_worker(void *ctx, int sig)
{
    struct supervisor *s = ctx;
    child_signal(s->child, sig);
}

static enum kernel_worker io_worker(void *ctx)
{
    struct supervisor *s = ctx;
    return respawn_state(&s->respawn);
}

static bool io_worker_hello(void *ctx)
{
    struct supervisor *s = ctx;
    return respawn_hello(&s->respawn);
}

static void io_restart_worker(void *ctx, const char *why)
{
    struct supervisor *s = ctx;
    respawn_restart(&s->respawn, why);
}

static double io_worker_cpu(void *ctx)
{
    struct supervisor *s = ctx;
    return child_cpu_seconds(s->child);
}

static unsigned long long io_worker_queued(void *ctx)
{
    struct supervisor *s = ctx;
    return child_queued(s->child);
}

static unsigned long long io_worker_written(void *ctx)
{
    struct supervisor *s = ctx;
    return child_written(s->child);
}

/* --- events ------------------------------------------------------------------- */

/* The kernel's own messages are signed with the key, and on TCP anyone reads
 * iopub: one sent back to the kernel as it was (a comm_msg, a comm_open)
 * would pass for the client's. No client uses the kernel's session. */
static struct log_limit echoes_logged = {
    .what = "lines about the kernel's own messages sent back to it",
    .lines_per_s = 1,
    .burst_lines = 5,
    .max_bytes = 1u << 20,
};

static bool own_message(const struct supervisor *s, const struct msg *m,
                        enum connection_channel ch)
{
    const char *session = json_string_value(json_object_get(m->header, "session"));
    if (!session || strcmp(session, s->k.session.session) != 0)
        return false;
    log_limited(&echoes_logged, LOG_WARN,
                "dropped a message on %s: it is one of the kernel's own, sent back to "
                "it (a client that reads iopub can do that)",
                connection_channel_name(ch));
    return true;
}

static bool on_msg(void *data, enum connection_channel ch, struct msg **m)
{
    struct supervisor *s = data;
    if (own_message(s, *m, ch))
        return !loop_stopped(s->loop);
    if (ch == CONNECTION_STDIN) {
        route_stdin(&s->k, m);
    } else {
        idle_touch(&s->idle);
        dispatch_msg(&s->k, m, ch);
    }
    return !loop_stopped(s->loop);
}

static void on_unreadable(void *data, enum connection_channel ch, struct msg **m,
                          const char *why)
{
    struct supervisor *s = data;
    if (!own_message(s, *m, ch))
        dispatch_unreadable(&s->k, m, ch, why);
}

static void on_subscribed(void *data, const char *topic, size_t len)
{
    struct supervisor *s = data;
    json_t *c = json_pack("{s:s%}", "subscription", topic, len);
    if (c)
        outbox_publish(&s->k, NULL, "iopub_welcome", &c);
}

static void on_socket(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    (void)events;
    const struct socket_event *e = data;
    const struct channels_sink sink = {e->s, on_msg, on_subscribed, on_unreadable};
    channels_drain(&e->s->channels, e->ch, &sink);
}

static void on_frame(void *data, const struct link_frame *f)
{
    struct supervisor *s = data;
    route_frame(&s->k, f);
}

static void on_corrupt(void *data, const char *what)
{
    struct supervisor *s = data;
    char why[512];
    snprintf(why, sizeof why,
             "The worker %s, and was restarted: variables and imports from earlier "
             "cells are lost.",
             what);
    respawn_restart(&s->respawn, why);
}

static void reap_children(struct supervisor *s)
{
    int status;
    pid_t pid;
    /* WUNTRACED: a worker stopped (by a SIGSTOP its code sent itself) is an event
     * too, or its cell would hang without a word. */
    while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
        if (WIFSTOPPED(status)) {
            if (pid == child_pid(s->child))
                respawn_stopped(&s->respawn, WSTOPSIG(status));
            else
                kill(pid, SIGKILL); /* a worker already let go of */
            continue;
        }
        if (pid == child_pid(s->child))
            respawn_reaped(&s->respawn, status);
        else
            respawn_reaped_other(&s->respawn, pid, status);
        child_reaped(s->child);
    }
}

static void on_signal(struct loop *l, long long id, int events, void *data)
{
    (void)id;
    (void)events;
    struct supervisor *s = data;
    struct signalfd_siginfo si;
    while (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        switch (si.ssi_signo) {
        case SIGCHLD:
            reap_children(s);
            break;
        case SIGINT:
            limits_interrupt_all(&s->k, "SIGINT");
            break;
        default:
            log_info("%s: shutting down", strsignal((int)si.ssi_signo));
            loop_stop(l);
            break;
        }
    }
}

/* A kernel started by a Jupyter client (which sets JPY_PARENT_PID) ends when
 * that client dies without shutting it down, as ipykernel does: otherwise a
 * killed notebook server or console leaves kernels running for ever. */
static double on_parent_check(struct loop *l, long long id, void *data)
{
    (void)id;
    struct supervisor *s = data;
    if (getppid() != s->parent_pid) {
        log_warn("the client that started this kernel has gone; shutting down");
        loop_stop(l);
        return LOOP_NOMORE;
    }
    return PARENT_CHECK_S;
}

static void on_gateway_interrupt(void *data)
{
    struct supervisor *s = data;
    limits_interrupt_all(&s->k, "the gateway's interrupt");
}

static void on_gateway_stop(void *data, const char *why)
{
    struct supervisor *s = data;
    log_info("%s: shutting down", why);
    loop_stop(s->loop);
}

/* Before each wait: start what waits for a worker that has become free. */
static void before_wait(struct loop *l, void *data)
{
    struct supervisor *s = data;
    shells_pump(&s->k);
    history_retry(&s->k.history);
    unsigned used = channels_take_used(&s->channels);
    for (int c = 0; used && c < CONNECTION_NCHANNELS; c++)
        if (used & (1u << c))
            loop_socket_used(l, s->channels.sockets[c]);
}

/* --- set-up --------------------------------------------------------------------- */

/* The workspace, the private folder and the file to hide, into the options
 * that the worker's command line is made from. */
static int prepare_folders(struct supervisor *s)
{
    struct options *opts = s->opts;
    char cwd[PATH_MAX], real[PATH_MAX];
    const char *ws = opts->workspace;
    if (!ws && !(ws = getcwd(cwd, sizeof cwd)))
        return -errno;
    if (!realpath(ws, real)) {
        int rc = -errno;
        log_error("the workspace %s cannot be used: %s", ws, strerror(errno));
        return rc;
    }
    free(opts->workspace);
    if (!(opts->workspace = strdup(real)))
        return -ENOMEM;
    char err[PATH_MAX + 256];
    int rc = options_resolve_paths(opts, err, sizeof err);
    if (rc) {
        log_error("%s", err);
        return rc;
    }
    rc = tmpdir_make(&s->tmpdir);
    if (rc) {
        log_error("cannot make a private temporary folder: %s", strerror(-rc));
        return rc;
    }
    font_cache_in(s->tmpdir, opts->workspace);
    free(opts->tmpdir);
    if (!(opts->tmpdir = strdup(s->tmpdir)))
        return -ENOMEM;
    if ((rc = kernel_prepare_history(opts)))
        return rc;
    char conn_real[PATH_MAX];
    struct stat st;
    if (realpath(opts->connection_file, conn_real)) {
        free(opts->hide);
        opts->hide = strdup(conn_real);
        /* Each worker checks that the path still names this file (worker.c). */
        char id[64];
        if (stat(conn_real, &st) == 0) {
            snprintf(id, sizeof id, "%llu:%llu", (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino);
            free(opts->hide_id);
            opts->hide_id = strdup(id);
        }
    }
    return 0;
}

/* Signals become events on a descriptor. Blocked before ZeroMQ makes its
 * threads, so they inherit the mask and none of them takes a signal. */
static int open_signals(struct supervisor *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return s->sigfd < 0 ? -errno : 0;
}

/* Registers the sockets, the signals and the parent's watch with the loop. */
static int register_events(struct supervisor *s)
{
    long long id =
        loop_add_fd(s->loop, s->sigfd, LOOP_READABLE, LOOP_RANK_SIGNALS, on_signal, s);
    if (id < 0)
        return (int)id;
    /* Registered in this order, which is the order of a turn within a rank. */
    static const enum connection_channel order[CONNECTION_NCHANNELS] = {
        CONNECTION_CONTROL, CONNECTION_HB, CONNECTION_STDIN, CONNECTION_IOPUB,
        CONNECTION_SHELL};
    for (int i = 0; i < CONNECTION_NCHANNELS && id > 0; i++) {
        enum connection_channel c = order[i];
        s->socket_events[c] = (struct socket_event){s, c};
        id = loop_add_socket(s->loop, s->channels.sockets[c],
                             c == CONNECTION_CONTROL ? LOOP_RANK_CONTROL
                                                     : LOOP_RANK_CHANNELS,
                             on_socket, &s->socket_events[c]);
    }
    const char *jpy = getenv("JPY_PARENT_PID");
    s->parent_pid = getppid();
    /* The gateway watches its kernels itself, through the communication port; the
     * process that started one is often a shell that has gone (ssh ... &). */
    if (id > 0 && !s->gateway && jpy && atoi(jpy) > 1 && s->parent_pid > 1)
        id = loop_add_timer(s->loop, PARENT_CHECK_S, on_parent_check, s);
    loop_set_before_wait(s->loop, before_wait, s);
    return id < 0 ? (int)id : 0;
}

/* Started by Enterprise Gateway: serve its communication port, then tell it where
 * the kernel listens. */
static int open_gateway(struct supervisor *s)
{
    const struct commport_events ev = {s, on_gateway_interrupt, on_gateway_stop};
    int fd = launcher_take_listener(s->gateway);
    if (!(s->commport = commport_new(s->loop, &fd, &ev)))
        return -ENOMEM;
    char err[512];
    int rc = launcher_report(s->gateway, err, sizeof err);
    if (rc)
        log_error("%s", err);
    else
        log_info("reported the kernel's connection to the gateway at %s",
                 s->gateway->response_address);
    return rc;
}

/* Large blocks (a chart on its way, the worker's frames and the messages made
 * of them) come from the heap and go back to it when freed, so that the next
 * large output reuses their pages rather than faulting in new ones; worker_process.c
 * gives the heap back to the system once large frames stop coming. Fixed, the
 * thresholds are not moved by glibc: only blocks over 64 MiB are mapped apart,
 * and free() itself never trims. */
static void tune_memory(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    /* And the first large output maps its blocks in one call each rather
     * than a page fault per page (prefault.h): jansson's strings and texts,
     * the link's buffer and frames. */
    json_set_alloc_funcs(prefault_malloc, free);
}

/* The worker starts first, so that its exec and Python's start overlap with
 * everything after (the key, the history, ZeroMQ's threads and sockets): it
 * needs only the folders and the options. It is exec'd, so it holds none of
 * this process's memory, and its hello waits on the link until the loop
 * runs. */
static int start_worker(struct supervisor *s)
{
    struct options *opts = s->opts;
    int rc = prepare_folders(s);
    if (rc || (rc = open_signals(s)))
        return rc;
    if (!(s->loop = loop_new(NULL)))
        return -ENOMEM;
    const struct child_events ev = {s, on_frame, on_corrupt};
    if (!(s->child = child_new(s->loop, &ev)))
        return -ENOMEM;
    child_set_frame_limit(
        s->child, link_worker_frame_limit(opts->max_output, options_max_images(opts)));
    if ((rc = respawn_init(&s->respawn, &s->k, s->child, s->loop, opts)))
        return rc;
    respawn_start(&s->respawn);
    return 0;
}

/* The connection file and its key, which then lives in OpenSSL's context
 * alone. */
static int load_key(struct supervisor *s)
{
    char err[512];
    int rc = connection_load(&s->conn, s->opts->connection_file, err, sizeof err);
    if (rc) {
        log_error("%s", err);
        return rc;
    }
    if ((rc = sign_init(&s->sign, s->conn.signature_scheme, s->conn.key,
                        s->conn.key_len))) {
        log_error("cannot set up message signing: %s", strerror(-rc));
        return rc;
    }
    if (!s->sign.enabled)
        log_warn("the connection file has an empty key: messages are not signed");
    /* The key now lives in OpenSSL's context; the copy in the file's struct goes. */
    memset(s->conn.key, 0, s->conn.key_len);
    return 0;
}

/* The request-handling state and the sockets, and the kernel_io between them. */
static int open_kernel(struct supervisor *s)
{
    struct options *opts = s->opts;
    const char *user = getenv("USER");
    struct passwd *pw = getpwuid(getuid());
    int rc;
    if ((rc = kernel_init(&s->k, opts, opts->workspace,
                          user ? user
                          : pw ? pw->pw_name
                               : "kernel")))
        return rc;
    if ((rc = channels_open(&s->channels, &s->conn, &s->sign,
                            (size_t)opts->max_message_mib << 20)))
        return rc;
    s->k.loop = s->loop;
    memcpy(s->k.ports, s->conn.ports, sizeof s->k.ports);
    s->k.io = (struct kernel_io){
        .ctx = s,
        .send = io_send,
        .to_worker = io_to_worker,
        .signal_worker = io_signal_worker,
        .worker = io_worker,
        .worker_hello = io_worker_hello,
        .restart_worker = io_restart_worker,
        .worker_cpu = io_worker_cpu,
        .worker_queued = io_worker_queued,
        .worker_written = io_worker_written,
        .client_present = io_client_present,
    };
    return 0;
}

static int supervisor_init(struct supervisor *s, struct options *opts,
                           struct launcher *gw)
{
    memset(s, 0, sizeof *s);
    tune_memory();
    s->opts = opts;
    s->gateway = gw;
    s->sigfd = -1;
    int rc;
    if ((rc = start_worker(s)) || (rc = load_key(s)) || (rc = open_kernel(s)) ||
        (rc = register_events(s)) ||
        /* no activity file in a gateway's private folder: its kernels are the gateway's
         */
        (rc = idle_start(&s->idle, &s->k, s->gateway ? NULL : opts->connection_file,
                         opts->idle_timeout_s)))
        return rc;
    return s->gateway ? open_gateway(s) : 0;
}

static void supervisor_release(struct supervisor *s)
{
    if (s->child) {
        child_stop(s->child);
        child_stop_spare(s->child);
        respawn_release(&s->respawn); /* the template too */
        child_end_all(s->child);
        /* Reap the last worker so that it is not left a zombie for our parent, and
         * so that its cgroup can go (a large one takes a moment to tear down): up
         * to 2 s, after the loop has ended, with nothing left to serve. */
        for (int i = 0; i < 2000 && waitpid(-1, NULL, WNOHANG) >= 0; i++)
            usleep(1000);
        child_free(s->child);
    }
    commport_free(s->commport);
    idle_release(&s->idle);
    kernel_release(&s->k);
    channels_close(&s->channels);
    loop_free(s->loop);
    sign_release(&s->sign);
    connection_release(&s->conn);
    if (s->sigfd >= 0)
        close(s->sigfd);
    if (s->tmpdir) {
        font_cache_out(s->tmpdir, s->opts->workspace);
        tmpdir_remove(s->tmpdir);
    }
    free(s->tmpdir);
}

int supervisor_run(struct options *opts, struct launcher *gw)
{
    struct supervisor s;
    int rc = supervisor_init(&s, opts, gw);
    if (rc) {
        supervisor_release(&s);
        return 1;
    }
    log_info("kernel %s listening on %s (%s), workspace %s",
             gw ? gw->kernel_id : s.k.session.session, s.conn.ip, s.conn.transport,
             opts->workspace);
    rc = loop_run(s.loop);
    if (rc)
        log_error("the event loop failed: %s", zmq_strerror(-rc));
    supervisor_release(&s);
    log_limits_flush();
    log_info("kernel stopped");
    return rc ? 1 : 0;
}
