/* mcp: a Model Context Protocol server in front of a sandpit kernel.
 *
 * The protocol is JSON-RPC 2.0, one message a line on stdin and stdout
 * (protocol version 2025-06-18, earlier ones accepted when a client asks for
 * them). The server is single-threaded; what makes that work is that while a
 * cell runs, the wait for its outcome (client_wait) also watches stdin: a
 * notifications/cancelled for the running call interrupts the cell (the
 * kernel raises KeyboardInterrupt, the variables survive, and no response is
 * sent for the cancelled request, as the protocol asks), a ping is answered
 * at once, and anything else is queued until the cell is over. Output that
 * arrives while a cell runs is also sent as progress notifications when the
 * client asked for them (a progressToken), so a long cell shows its output
 * and a client can tell that it has started.
 *
 * The kernel is a child process on a private connection file in the Jupyter
 * runtime folder; it dies with this process (PR_SET_PDEATHSIG, and the
 * kernel's own watch on JPY_PARENT_PID), and is shut down cleanly when the
 * client closes stdin. */
#include "kernel/client/mcp.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/util/base64.h"
#include "kernel/util/flags.h"
#include "kernel/util/monotime.h"
#include "kernel/client/client.h"
#include "kernel/client/connfile.h"
#include "kernel/client/instance.h"
#include "kernel/client/jsonrpc.h"
#include "kernel/client/launch.h"
#include "kernel/client/lifecycle.h"
#include "kernel/client/mcp_tools.h"
#include "kernel/client/outcome.h"
#include "kernel/client/workspace.h"
#include "kernel/options.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
#define START_TIMEOUT_S      60.0
#define REPLY_GRACE_S        30.0 /* past a cell's own limit: the kernel's escalation */
#define MAX_PROGRESS_CHARS   2000
#define EOF_FINISH_S         5.0 /* a cell's time to end once stdin has closed */
#define EOF_INTERRUPT_S      5.0 /* and after the interrupt that follows */

static const char *const known_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

struct mcp {
    struct jsonrpc rpc;
    struct options opts;
    struct workspace ws;
    struct launched kernel;
    struct client client;
    bool client_open, ready;
    bool fresh; /* the kernel had stopped: a new one, to say so in the next result */
    char conn[PATH_MAX];
    char log[PATH_MAX]; /* the kernel's stderr */
    const char *version;
    json_t *queue; /* messages that arrived while a cell ran */
    /* The python_exec that is running, while it runs. */
    json_t *running_id;     /* borrowed from its request */
    json_t *progress_token; /* borrowed, or NULL */
    int progress;
    bool cancelled, interrupted;
    int watch[2]; /* stdin and the kernel's pidfd while a cell runs; -1: none */
    struct outcome *outcome;
};

/* --- tools ------------------------------------------------------------------------- */

/* Appends the end of the kernel's log to err, the reason a start failed, and
 * copies it to stderr, where the kernel's messages would otherwise go. */
static void add_log_tail(struct mcp *m, char *err, size_t errlen)
{
    char *tail = launch_log_tail(m->kernel.log_path, 1500);
    size_t n = strlen(err);
    if (tail && *tail) {
        fprintf(stderr, "sandpit mcp: the kernel's log (%s) ends:\n%s", m->log, tail);
        snprintf(err + n, errlen - n, "; the end of its log:\n%s", tail);
    }
    free(tail);
}

static int ensure_kernel(struct mcp *m, char *err, size_t errlen)
{
    if (m->ready && !launch_exited(&m->kernel))
        return 0;
    int rc = 0;
    if (launch_exited(&m->kernel)) {
        /* It died (killed from outside): a new one, on the same file. */
        char **argv = NULL;
        if (m->kernel.argv) {
            size_t n = 0;
            while (m->kernel.argv[n])
                n++;
            argv = calloc(n + 1, sizeof *argv);
            for (size_t i = 0; argv && i < n; i++)
                argv[i] = strdup(m->kernel.argv[i]);
        }
        if ((rc = launch_start(&m->kernel, &argv, true, m->log, err, errlen)))
            return rc;
        m->ready = false;
        m->fresh = true;
    }
    if ((rc = launch_wait_ready(&m->kernel, &m->client, START_TIMEOUT_S, NULL, err,
                                errlen))) {
        add_log_tail(m, err, errlen);
        return rc;
    }
    m->ready = true;
    return 0;
}

static void send_progress(struct mcp *m, const char *text)
{
    if (!m->progress_token)
        return;
    char *cut = outcome_cut(text, MAX_PROGRESS_CHARS);
    json_t *p = json_pack("{s:O, s:i, s:s}", "progressToken", m->progress_token,
                          "progress", ++m->progress, "message", cut ? cut : "");
    free(cut);
    jsonrpc_notify(&m->rpc, "notifications/progress", &p);
}

static void on_iopub(void *arg, const struct msg *msg)
{
    struct mcp *m = arg;
    outcome_add(m->outcome, msg);
    const char *type = msg_type(msg);
    if (strcmp(type, "stream") == 0) {
        const char *text = json_string_value(json_object_get(msg->content, "text"));
        if (text)
            send_progress(m, text);
    } else if (strcmp(type, "execute_input") == 0) {
        send_progress(m, "running");
    }
}

static void interrupt_kernel(struct mcp *m)
{
    if (m->interrupted)
        return;
    m->interrupted = true;
    client_send(&m->client, CONNECTION_CONTROL, "interrupt_request", NULL, NULL, NULL);
}

static void handle(struct mcp *m, json_t *msg);

/* Removes the queued request whose id is id, if any: it was cancelled
 * before its turn (over HTTP, several calls may wait behind a cell). */
static void drop_queued(struct mcp *m, const json_t *id)
{
    for (size_t i = 0; id && i < json_array_size(m->queue); i++) {
        json_t *q = json_array_get(m->queue, i);
        if (json_object_get(q, "method") && json_equal(json_object_get(q, "id"), id)) {
            json_array_remove(m->queue, i);
            return;
        }
    }
}

/* stdin became readable while a cell runs. */
static int on_fd(void *arg, int fd)
{
    struct mcp *m = arg;
    if (fd != 0)
        return -ECHILD; /* the kernel's pidfd: it has exited */
    if (jsonrpc_fill(&m->rpc) || m->rpc.eof) {
        /* The client has no more to say (it may still read): stop watching
         * stdin, finish the cell, answer what was asked, then exit. */
        m->rpc.eof = true;
        m->watch[0] = -1;
    }
    json_t *msg;
    int r;
    while ((r = jsonrpc_next(&m->rpc, &msg)) != 0) {
        if (r < 0) {
            jsonrpc_error(&m->rpc, NULL, JSONRPC_PARSE_ERROR, "not JSON");
            continue;
        }
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *params = json_object_get(msg, "params");
        json_t *rid = json_object_get(params, "requestId");
        bool cancel = method && strcmp(method, "notifications/cancelled") == 0;
        if (cancel && json_equal(rid, m->running_id)) {
            m->cancelled = true;
            interrupt_kernel(m);
            json_decref(msg);
        } else if (cancel) {
            drop_queued(m, rid); /* a call still waiting its turn is never run */
            json_decref(msg);
        } else if (method && strcmp(method, "ping") == 0) {
            handle(m, msg);
            json_decref(msg);
        } else {
            json_array_append_new(m->queue, msg);
        }
    }
    return m->rpc.eof ? -EPIPE : 0;
}

/* The rest of a cell's run once stdin has closed: the client may still read
 * the answer, but nothing can cancel the cell any more, so it gets its time
 * limit (or EOF_FINISH_S without one) to end, then an interrupt and
 * EOF_INTERRUPT_S more; a cell still running then is ended with its kernel
 * (-EPIPE). */
static int wait_after_eof(struct mcp *m, const char *msg_id, struct client_wait *w,
                          struct msg **reply)
{
    w->fds = &m->watch[1];
    w->nfds = 1;
    if (w->timeout_s <= 0) /* a time limit, if set, bounds the cell already */
        w->timeout_s =
            m->opts.timeout_s > 0 ? m->opts.timeout_s + REPLY_GRACE_S : EOF_FINISH_S;
    int rc = client_wait(&m->client, CONNECTION_SHELL, msg_id, w, reply);
    if (rc == -ETIMEDOUT) {
        interrupt_kernel(m);
        w->timeout_s = EOF_INTERRUPT_S;
        rc = client_wait(&m->client, CONNECTION_SHELL, msg_id, w, reply);
    }
    if (rc == -ETIMEDOUT) {
        fprintf(stderr, "sandpit mcp: standard input closed and the running cell did not "
                        "stop when interrupted: ending it with its kernel\n");
        launch_stop(&m->kernel, &m->client, 2);
        m->ready = false;
        rc = -EPIPE;
    }
    return rc;
}

/* A stream's text, labelled with its name on a line of its own: "[stdout]". */
static json_t *stream_item(const json_t *out, const char *text)
{
    const char *name = json_string_value(json_object_get(out, "name"));
    size_t n = strlen(text);
    char *labelled = malloc(n + 16);
    if (!labelled)
        return NULL;
    snprintf(labelled, n + 16, "[%s]\n%s",
             name && strcmp(name, "stderr") == 0 ? "stderr" : "stdout", text);
    json_t *item = mcp_text_item(labelled);
    free(labelled);
    return item;
}

static void add_outputs(json_t *content, const struct outcome *o)
{
    size_t i;
    json_t *out;
    json_array_foreach(o->outputs, i, out) {
        const char *type = json_string_value(json_object_get(out, "type"));
        const char *text = json_string_value(json_object_get(out, "text"));
        json_t *images = json_object_get(out, "images");
        if (!type)
            continue;
        if (strcmp(type, "error") == 0) {
            char *tb = outcome_traceback_text(out);
            if (tb)
                json_array_append_new(content, mcp_text_item(tb));
            free(tb);
            continue;
        }
        size_t k;
        json_t *index;
        json_array_foreach(images, k, index) {
            json_t *img = json_array_get(o->images, (size_t)json_integer_value(index));
            const char *mime = json_string_value(json_object_get(img, "mime"));
            const char *data = json_string_value(json_object_get(img, "data"));
            if (!mime || !data)
                continue;
            char *b64 = NULL;
            if (strcmp(mime, "image/svg+xml") == 0) { /* SVG comes as text */
                b64 = base64_encode((const unsigned char *)data, strlen(data));
            } else if ((b64 = malloc(strlen(data) + 1))) {
                /* base64 from the kernel, without the line breaks some put in */
                size_t w = 0;
                for (const char *c = data; *c; c++)
                    if (*c != '\n' && *c != '\r' && *c != ' ')
                        b64[w++] = *c;
                b64[w] = 0;
            }
            if (b64)
                json_array_append_new(content,
                                      json_pack("{s:s, s:s, s:s}", "type", "image",
                                                "data", b64, "mimeType", mime));
            free(b64);
        }
        if (text && strcmp(type, "stream") == 0)
            json_array_append_new(content, stream_item(out, text));
        else if (text && !json_array_size(images))
            json_array_append_new(content, mcp_text_item(text));
    }
}

/* The result of a cell that ran: its outputs, its error, and notes. */
static json_t *exec_result(struct mcp *m, struct outcome *o, const struct msg *reply)
{
    const char *status;
    outcome_finish(o, reply, &status);
    json_t *content = json_array();
    add_outputs(content, o);
    bool reply_only_error = strcmp(status, "error") == 0 && o->error;
    for (size_t i = 0; reply_only_error && i < json_array_size(o->outputs); i++) {
        const char *type =
            json_string_value(json_object_get(json_array_get(o->outputs, i), "type"));
        if (type && strcmp(type, "error") == 0)
            reply_only_error = false;
    }
    if (reply_only_error) {
        char *tb = outcome_traceback_text(o->error);
        json_array_append_new(content, mcp_text_item(tb ? tb : "error"));
        free(tb);
    }
    if (strcmp(status, "aborted") == 0)
        json_array_append_new(content, mcp_text_item("The cell was not run (aborted)."));
    if (!json_array_size(content))
        json_array_append_new(content, mcp_text_item("(no output)"));
    if (m->fresh)
        json_array_insert_new(content, 0,
                              mcp_text_item("(The Python kernel had stopped, idle or "
                                            "ended from outside: this ran in a fresh "
                                            "interpreter, without earlier variables.)"));
    m->fresh = false;
    return mcp_tool_result(&content, strcmp(status, "ok") != 0);
}

/* python_exec. Returns the result, or NULL when none is due (cancelled). */
static json_t *python_exec(struct mcp *m, json_t *id, json_t *args, json_t *meta)
{
    const char *code = json_string_value(json_object_get(args, "code"));
    json_t *t = json_object_get(args, "timeout");
    double timeout = json_is_number(t) ? json_number_value(t) : 0;
    char err[1024];
    if (ensure_kernel(m, err, sizeof err))
        return mcp_tool_error("The Python kernel could not start", err);
    struct outcome o;
    if (outcome_init(&o)) {
        outcome_release(&o);
        return mcp_tool_error("out of memory", NULL);
    }
    json_t *metadata =
        timeout > 0 ? json_pack("{s:{s:f}}", "sandpit", "timeout", timeout) : NULL;
    char msg_id[CLIENT_ID_LEN];
    struct msg *reply = NULL;
    m->watch[0] = m->rpc.eof ? -1 : 0;
    m->watch[1] = m->kernel.pidfd;
    struct client_wait w = {.on_iopub = on_iopub,
                            .fds = m->watch,
                            .nfds = 2,
                            .on_fd = on_fd,
                            .arg = m,
                            .timeout_s = timeout > 0 ? timeout + REPLY_GRACE_S : 0};
    m->running_id = id;
    m->progress_token = json_object_get(meta, "progressToken");
    m->progress = 0;
    m->cancelled = m->interrupted = false;
    m->outcome = &o;
    int rc = client_execute(&m->client, code, false, &metadata, msg_id);
    if (!rc && !m->rpc.eof)
        rc = client_wait(&m->client, CONNECTION_SHELL, msg_id, &w, &reply);
    if ((!rc && m->rpc.eof && !reply) || rc == -EPIPE)
        rc = wait_after_eof(m, msg_id, &w, &reply);
    m->running_id = m->progress_token = NULL;
    m->outcome = NULL;
    json_t *result = NULL;
    if (m->cancelled) {
        result = NULL;
    } else if (rc) {
        if (rc == -ECHILD)
            m->ready = false;
        result = mcp_tool_error("The cell's outcome was lost",
                                rc == -ECHILD      ? "the Python kernel exited"
                                : rc == -EHOSTDOWN ? "the Python kernel stopped answering"
                                : rc == -ETIMEDOUT ? "no answer in time"
                                : rc == -EPIPE ? "standard input closed and the cell did "
                                                 "not stop when interrupted: the kernel "
                                                 "was stopped"
                                               : strerror(-rc));
    } else {
        result = exec_result(m, &o, reply);
    }
    msg_free(reply);
    outcome_release(&o);
    return result;
}

static json_t *python_reset(struct mcp *m)
{
    char err[1024];
    if (ensure_kernel(m, err, sizeof err))
        return mcp_tool_error("The Python kernel could not start", err);
    m->fresh = false; /* the reply says so itself */
    if (launch_restart(&m->kernel, &m->client, START_TIMEOUT_S, err, sizeof err) < 0) {
        m->ready = false;
        return mcp_tool_error("The restart failed", err);
    }
    json_t *content = json_pack(
        "[o]",
        mcp_text_item("A fresh interpreter is running: the variables, imports and "
                      "functions of earlier calls are gone. Files in the workspace "
                      "stay."));
    return mcp_tool_result(&content, false);
}

/* --- the protocol ------------------------------------------------------------------ */

static void handle_call(struct mcp *m, json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    json_t *result = NULL;
    if (args && !json_is_object(args)) {
        jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    if (!name) {
        jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS, "no tool name");
        return;
    }
    if (strcmp(name, "python_exec") == 0) {
        if (!json_is_string(json_object_get(args, "code"))) {
            jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS,
                          "python_exec needs \"code\", a string");
            return;
        }
        json_t *t = json_object_get(args, "timeout");
        if (t && (!json_is_number(t) || json_number_value(t) < 0)) {
            jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS,
                          "\"timeout\" must be a number of seconds");
            return;
        }
        result = python_exec(m, id, args, json_object_get(params, "_meta"));
        if (!result)
            return; /* cancelled: no response */
    } else if (strcmp(name, "python_reset") == 0) {
        result = python_reset(m);
    } else if (strcmp(name, "workspace_list") == 0) {
        result = mcp_list_files(&m->ws, args);
    } else if (strcmp(name, "workspace_read") == 0) {
        if (!json_is_string(json_object_get(args, "path"))) {
            jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS,
                          "workspace_read needs \"path\", a string");
            return;
        }
        const char *bad = mcp_read_args_error(args);
        if (bad) {
            jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS, bad);
            return;
        }
        result = mcp_read_file(&m->ws, args);
    } else {
        char text[256];
        snprintf(text, sizeof text, "unknown tool \"%.100s\"", name);
        jsonrpc_error(&m->rpc, id, JSONRPC_INVALID_PARAMS, text);
        return;
    }
    if (result)
        jsonrpc_result(&m->rpc, id, &result);
    else
        jsonrpc_error(&m->rpc, id, JSONRPC_INTERNAL_ERROR, "out of memory");
}

static void handle_initialize(struct mcp *m, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *version = MCP_PROTOCOL_VERSION;
    for (size_t i = 0; asked && i < sizeof known_versions / sizeof *known_versions; i++)
        if (strcmp(asked, known_versions[i]) == 0)
            version = known_versions[i];
    json_t *r = json_pack(
        "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
        "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "sandpit",
        "title", "sandpit: sandboxed Python", "version", m->version, "instructions",
        "python_exec runs Python in one persistent, sandboxed interpreter (state is kept "
        "between calls; charts come back as images); python_reset starts afresh; "
        "workspace_list and workspace_read show the files the code wrote.");
    jsonrpc_result(&m->rpc, id, &r);
}

static void handle(struct mcp *m, json_t *msg)
{
    if (!json_is_object(msg)) {
        jsonrpc_error(&m->rpc, NULL, JSONRPC_INVALID_REQUEST, "not a JSON-RPC message");
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    if (!method)
        return; /* a response: we send no requests, so nothing waits for one */
    if (!id)
        return; /* a notification: initialized, or a cancel for a call already over */
    if (!json_is_string(id) && !json_is_integer(id)) {
        jsonrpc_error(&m->rpc, NULL, JSONRPC_INVALID_REQUEST,
                      "a request id is a string or an integer");
        return;
    }
    if (strcmp(method, "initialize") == 0) {
        handle_initialize(m, id, params);
    } else if (strcmp(method, "ping") == 0) {
        json_t *r = json_object();
        jsonrpc_result(&m->rpc, id, &r);
    } else if (strcmp(method, "tools/list") == 0) {
        json_t *r = mcp_tool_list();
        jsonrpc_result(&m->rpc, id, &r);
    } else if (strcmp(method, "tools/call") == 0) {
        handle_call(m, id, params);
    } else {
        char text[256];
        snprintf(text, sizeof text, "no method \"%.100s\"", method);
        jsonrpc_error(&m->rpc, id, JSONRPC_METHOD_NOT_FOUND, text);
    }
}

/* The private connection file and the kernel's log, in the runtime folder. */
static int set_paths(struct mcp *m, const char *runtime)
{
    int pid = (int)getpid();
    if (snprintf(m->conn, sizeof m->conn, "%s/sandpit-mcp-%d.json", runtime, pid) >=
            (int)sizeof m->conn ||
        snprintf(m->log, sizeof m->log, "%s/sandpit-mcp-%d.log", runtime, pid) >=
            (int)sizeof m->log) {
        m->conn[0] = m->log[0] = 0;
        return -ENAMETOOLONG;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sandpit mcp [--workspace DIR] [--profile default|agent] "
            "[--max-chars N] [kernel options]\n\n"
            "A Model Context Protocol server on standard input and output, for coding\n"
            "assistants: tools python_exec, python_reset, workspace_list and\n"
            "workspace_read, on a sandboxed kernel of its own whose workspace is DIR\n"
            "(default: the current folder). Each text it returns keeps at most\n"
            "--max-chars characters, its beginning and its end (default 20000; 0: no\n"
            "limit).\n\nkernel options:\n");
    options_usage(f);
}

/* Starts the kernel, in the workspace of the options (by default the current
 * folder). 0, or 1 (said on stderr). */
static int start(struct mcp *m)
{
    char err[1024] = "", runtime[PATH_MAX], cwd[PATH_MAX];
    int rc;
    const char *ws = m->opts.workspace ? m->opts.workspace : getcwd(cwd, sizeof cwd);
    if (!ws || (rc = instance_runtime_dir(runtime, sizeof runtime)) ||
        set_paths(m, runtime)) {
        fprintf(stderr, "sandpit mcp: cannot work out the Jupyter runtime folder\n");
        return 1;
    }
    struct instance dir; /* for instance_make_dir */
    memset(&dir, 0, sizeof dir);
    snprintf(dir.dir, sizeof dir.dir, "%s", runtime);
    if ((rc = instance_make_dir(&dir)) || (rc = workspace_init(&m->ws, ws, runtime))) {
        fprintf(stderr, "sandpit mcp: cannot use %s: %s\n", rc ? ws : runtime,
                strerror(-rc));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    char **kargv = NULL;
    if (jsonrpc_init(&m->rpc, 0, 1) || !(m->queue = json_array()) ||
        connfile_write_ipc(m->conn, err, sizeof err) < 0 ||
        !(kargv = lifecycle_kernel_argv(&m->opts, m->conn, m->ws.root)) ||
        launch_start(&m->kernel, &kargv, true, m->log, err, sizeof err) ||
        client_open(&m->client, m->conn, err, sizeof err)) {
        fprintf(stderr, "sandpit mcp: cannot start the kernel: %s\n", err);
        return 1;
    }
    m->client_open = true;
    return 0;
}

/* Answers the client's messages until its end of standard input. */
static void serve(struct mcp *m)
{
    for (;;) {
        json_t *msg;
        while (json_array_size(m->queue)) {
            msg = json_incref(json_array_get(m->queue, 0));
            json_array_remove(m->queue, 0);
            handle(m, msg);
            json_decref(msg);
        }
        int r;
        while ((r = jsonrpc_next(&m->rpc, &msg)) != 0) {
            if (r < 0) {
                jsonrpc_error(&m->rpc, NULL, JSONRPC_PARSE_ERROR, "not JSON");
                continue;
            }
            handle(m, msg);
            json_decref(msg);
            if (json_array_size(m->queue))
                break;
        }
        if (json_array_size(m->queue))
            continue;
        if (m->rpc.eof)
            break;
        struct pollfd p = {.fd = 0, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            break;
        if (p.revents && (jsonrpc_fill(&m->rpc) != 0))
            break;
    }
}

int mcp_main(int argc, char **argv, const char *version)
{
    struct mcp m;
    char err[1024];
    int status = 2;
    memset(&m, 0, sizeof m);
    m.version = version;
    options_init(&m.opts);
    launch_init(&m.kernel);
    int rc = mcp_take_max_chars(&argc, argv, err, sizeof err);
    if (!rc)
        rc = lifecycle_parse_kernel_options(&m.opts, "sandpit mcp", argc, argv, err,
                                            sizeof err);
    if (rc == FLAGS_HELP)
        usage(stdout);
    else if (rc)
        fprintf(stderr, "sandpit mcp: %s\n", err);
    if (rc) {
        status = rc == FLAGS_HELP ? 0 : 2;
        goto out;
    }
    status = start(&m); /* the command line was right: what fails now is a failure */
    /* The kernel starts while the client initialises; the first tool call
     * waits for it. */
    if (status == 0)
        serve(&m);
out:
    if (m.kernel.pid > 0)
        launch_stop(&m.kernel, m.client_open ? &m.client : NULL, 5);
    if (m.client_open)
        client_close(&m.client);
    if (m.conn[0])
        connfile_remove(m.conn);
    if (m.log[0])
        unlink(m.log);
    json_decref(m.queue);
    jsonrpc_release(&m.rpc);
    launch_release(&m.kernel);
    options_release(&m.opts);
    return status;
}
