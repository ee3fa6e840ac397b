/* mcp_child: a `sandpit mcp` on pipes (mcp_child.h).
 *
 * The hard part is that nothing here may block the server's loop, whatever
 * the child does. Its stdout is read without blocking by jsonrpc.c, as
 * `sandpit mcp` reads its own input, within MCP_CHILD_LINE_MAX (a longer
 * line is dropped up to its end, and said in the log); its stdin is written without
 * blocking, and what the pipe does not take waits in a bounded queue that a timer offers
 * again (the loop watches readability only). A child that stops reading, or that does not
 * exit once its input has closed, is signalled from a timer, never waited for; only the
 * server's own stop waits, within a bound. Its end is seen on its pidfd, after which what
 * it wrote last is read before its session hears of it. */
#include "kernel/serve/mcp_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/client/jsonrpc.h"
#include "kernel/client/launch.h"
#include "kernel/client/lifecycle.h"
#include "kernel/serve/loop.h"
#include "kernel/serve/relay.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "protocol/errbuf.h"

#define RETRY_US     (20 * LWS_US_PER_MS) /* a queue the pipe did not take */
#define KILL_AFTER_S 3.0                  /* after SIGTERM, before SIGKILL */
#define PIPE_BYTES   (1 << 20)            /* the stdin pipe's size, if allowed */
#define READ_CHUNK   65536                /* what the server's stop reads at a time */

struct mcp_child {
    struct mcp_child_set *set;
    struct mcp_child *next;
    struct launched proc;
    int in_fd, out_fd; /* our ends: its stdin (write), its stdout (read) */
    struct loop_watch *out_watch, *exit_watch;
    struct relay *relay;
    struct mcp_child_hooks hooks;
    char name[64];
    struct jsonrpc rpc; /* its stdout, a message a line (only the reading half) */
    char *queue;        /* bytes for its stdin not yet written */
    size_t qlen, qoff;
    lws_sorted_usec_list_t retry, stop_timer;
    bool stopping, termed, exited;
};

void mcp_child_set_init(struct mcp_child_set *set, struct lws_context *ctx,
                        struct lws_vhost *vh, bool relay_logs)
{
    memset(set, 0, sizeof *set);
    set->ctx = ctx;
    set->vh = vh;
    set->relay_logs = relay_logs;
}

static void close_input(struct mcp_child *c)
{
    if (c->in_fd >= 0)
        close(c->in_fd);
    c->in_fd = -1;
    free(c->queue);
    c->queue = NULL;
    c->qlen = c->qoff = 0;
    lws_sul_cancel(&c->retry);
}

/* Unlinks c from its set and frees it; the process must have gone. */
static void child_free(struct mcp_child *c)
{
    struct mcp_child **pp = &c->set->head;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    c->set->count--;
    lws_sul_cancel(&c->stop_timer);
    close_input(c);
    loop_unwatch(&c->out_watch);
    loop_unwatch(&c->exit_watch);
    if (c->out_fd >= 0)
        close(c->out_fd);
    relay_free(c->relay);
    launch_release(&c->proc);
    jsonrpc_release(&c->rpc);
    free(c);
}

/* Its stdout is readable: every whole line, until the pipe is empty. */
static void on_output(void *arg)
{
    struct mcp_child *c = arg;
    while (c->out_fd >= 0) {
        int rc = jsonrpc_fill(&c->rpc), r;
        json_t *msg;
        while ((r = jsonrpc_next(&c->rpc, &msg)) != 0) {
            if (r == 1 && c->hooks.on_message)
                c->hooks.on_message(c->hooks.arg, msg);
            else if (r != 1)
                log_warn("mcp session %s: a line of its process is not JSON, or is over "
                         "%u bytes: dropped",
                         c->name, MCP_CHILD_LINE_MAX);
            json_decref(msg);
        }
        if (rc || c->rpc.eof) /* its end: nothing more will come */
            loop_unwatch(&c->out_watch);
        if (rc || c->rpc.eof || c->rpc.empty)
            return;
    }
}

static void on_exit_fd(void *arg)
{
    struct mcp_child *c = arg;
    if (!launch_exited(&c->proc))
        return;
    on_output(c); /* what it wrote before it went */
    c->exited = true;
    loop_unwatch(&c->exit_watch);
    if (!c->stopping) {
        log_info("mcp session %s: its process (pid %d) has exited", c->name,
                 (int)c->proc.pid);
        if (c->hooks.on_exit)
            c->hooks.on_exit(c->hooks.arg);
    }
    child_free(c);
}

static int flush_queue(struct mcp_child *c);

static void on_retry(lws_sorted_usec_list_t *sul)
{
    struct mcp_child *c = lws_container_of(sul, struct mcp_child, retry);
    flush_queue(c);
}

/* Writes what the pipe takes; the rest waits for the retry timer. */
static int flush_queue(struct mcp_child *c)
{
    while (c->in_fd >= 0 && c->qoff < c->qlen) {
        ssize_t w = write(c->in_fd, c->queue + c->qoff, c->qlen - c->qoff);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            lws_sul_schedule(c->set->ctx, 0, &c->retry, on_retry, RETRY_US);
            return 0;
        }
        if (w <= 0) {
            close_input(c); /* it has closed its stdin: it is going */
            return -EPIPE;
        }
        c->qoff += (size_t)w;
    }
    c->qlen = c->qoff = 0;
    return 0;
}

int mcp_child_send(struct mcp_child *c, const json_t *msg)
{
    if (!c || c->stopping || c->in_fd < 0)
        return -EPIPE;
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!text)
        return -ENOMEM;
    size_t n = strlen(text), pending = c->qlen - c->qoff;
    int rc = 0;
    if (pending + n + 1 > MCP_CHILD_QUEUE_MAX) {
        rc = -ENOBUFS;
        goto out;
    }
    if (c->qoff) { /* what was written goes, so that the queue stays small */
        memmove(c->queue, c->queue + c->qoff, pending);
        c->qlen = pending;
        c->qoff = 0;
    }
    char *q = realloc(c->queue, c->qlen + n + 1);
    if (!q) {
        rc = -ENOMEM;
        goto out;
    }
    c->queue = q;
    memcpy(q + c->qlen, text, n);
    q[c->qlen + n] = '\n';
    c->qlen += n + 1;
    rc = flush_queue(c);
out:
    free(text);
    return rc;
}

int mcp_child_pid(const struct mcp_child *c)
{
    return c ? (int)c->proc.pid : 0;
}

/* The command line: sandpit mcp --workspace W and the kernel options. New
 * NULL-terminated array of new strings, or NULL. */
static char **child_argv(const struct options *o, const char *workspace)
{
    const char *words[] = {"mcp", "--workspace", workspace};
    return lifecycle_command_argv(o, words, sizeof words / sizeof words[0]);
}

/* The pipes, the process and the watches of c. 0 or -errno with err. */
static int spawn(struct mcp_child *c, const struct options *o, const char *workspace,
                 const char *runtime_dir, char *err, size_t errlen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, rc;
    char log[64] = "", runtime[PATH_MAX + 32];
    char *env[] = {runtime, NULL};
    char **argv = child_argv(o, workspace);
    if (!argv)
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    snprintf(runtime, sizeof runtime, "JUPYTER_RUNTIME_DIR=%s",
             runtime_dir ? runtime_dir : "");
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        rc = errbuf_set(-errno, err, errlen, "cannot make pipes: %s", strerror(errno));
        goto out;
    }
    fcntl(in[1], F_SETPIPE_SZ, PIPE_BYTES); /* fewer retries; a bound if refused */
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    if (c->set->relay_logs &&
        !(c->relay = relay_new(c->set->vh, c->name, "", log, sizeof log))) {
        rc = errbuf_set(-ENOMEM, err, errlen, "cannot relay its log");
        goto out;
    }
    if ((rc = launch_start_io(&c->proc, &argv, in[0], out[1], log[0] ? log : NULL,
                              runtime_dir ? env : NULL, err, errlen)))
        goto out;
    c->in_fd = in[1];
    c->out_fd = out[0];
    in[1] = out[0] = -1;
    if (jsonrpc_init(&c->rpc, c->out_fd, -1)) {
        rc = errbuf_set(-ENOMEM, err, errlen, "out of memory");
        goto out;
    }
    c->rpc.max_line = MCP_CHILD_LINE_MAX;
    c->out_watch = loop_watch(c->set->vh, c->out_fd, on_output, c);
    if (c->proc.pidfd >= 0)
        c->exit_watch = loop_watch(c->set->vh, c->proc.pidfd, on_exit_fd, c);
    if (!c->out_watch || !c->exit_watch)
        rc = errbuf_set(-ENOMEM, err, errlen, "cannot watch its process");
out:
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
    int fds[] = {in[0], in[1], out[0], out[1]};
    for (size_t i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

/* SIGKILL and reaped: for a child that must not outlive what failed. */
static void kill_now(struct mcp_child *c)
{
    if (c->proc.pid > 0 && !launch_exited(&c->proc)) {
        kill(c->proc.pid, SIGKILL);
        while (waitpid(c->proc.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    c->proc.pid = 0;
}

int mcp_child_start(struct mcp_child_set *set, const struct options *o,
                    const char *workspace, const char *runtime_dir, const char *name,
                    const struct mcp_child_hooks *hooks, struct mcp_child **out,
                    char *err, size_t errlen)
{
    *out = NULL;
    struct mcp_child *c = calloc(1, sizeof *c);
    if (!c)
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    c->set = set;
    c->in_fd = c->out_fd = -1;
    launch_init(&c->proc);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->next = set->head;
    set->head = c;
    set->count++;
    int rc = spawn(c, o, workspace, runtime_dir, err, errlen);
    if (rc) {
        kill_now(c);
        child_free(c);
        return rc;
    }
    c->hooks = *hooks;
    *out = c;
    return 0;
}

static void on_stop_timer(lws_sorted_usec_list_t *sul)
{
    struct mcp_child *c = lws_container_of(sul, struct mcp_child, stop_timer);
    if (launch_exited(&c->proc)) {
        child_free(c); /* gone without its pidfd saying so (none) */
        return;
    }
    if (!c->termed) {
        log_warn("mcp session %s: its process lingers: SIGTERM", c->name);
        kill(c->proc.pid, SIGTERM);
        c->termed = true;
    } else {
        log_warn("mcp session %s: its process lingers: SIGKILL", c->name);
        kill(c->proc.pid, SIGKILL);
    }
    lws_sul_schedule(c->set->ctx, 0, &c->stop_timer, on_stop_timer,
                     (lws_usec_t)(KILL_AFTER_S * LWS_US_PER_SEC));
}

void mcp_child_stop(struct mcp_child **cp)
{
    struct mcp_child *c = *cp;
    *cp = NULL;
    if (!c || c->stopping)
        return;
    c->stopping = true;
    memset(&c->hooks, 0, sizeof c->hooks);
    close_input(c); /* its end of input: it finishes, stops its kernel, exits */
    lws_sul_schedule(c->set->ctx, 0, &c->stop_timer, on_stop_timer,
                     (lws_usec_t)(MCP_CHILD_STOP_S * LWS_US_PER_SEC));
}

/* Waits until every child has exited or until deadline; true if all have. */
static bool wait_all(struct mcp_child_set *set, double deadline)
{
    for (;;) {
        bool all = true;
        for (struct mcp_child *c = set->head; c; c = c->next) {
            if (c->out_fd >= 0) { /* keep its stdout moving, so that it can end */
                char buf[READ_CHUNK];
                while (read(c->out_fd, buf, sizeof buf) > 0)
                    ;
            }
            all = all && launch_exited(&c->proc);
        }
        if (all || monotime_now() >= deadline)
            return all;
        poll(NULL, 0, 20);
    }
}

void mcp_child_set_release(struct mcp_child_set *set)
{
    for (struct mcp_child *c = set->head; c; c = c->next) {
        c->stopping = true;
        memset(&c->hooks, 0, sizeof c->hooks);
        close_input(c);
    }
    if (!wait_all(set, monotime_now() + MCP_CHILD_SHUTDOWN_S)) {
        for (struct mcp_child *c = set->head; c; c = c->next)
            if (!launch_exited(&c->proc))
                kill(c->proc.pid, SIGTERM);
        if (!wait_all(set, monotime_now() + KILL_AFTER_S))
            for (struct mcp_child *c = set->head; c; c = c->next)
                kill_now(c);
    }
    while (set->head)
        child_free(set->head);
}
