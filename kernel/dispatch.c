/* dispatch: what the supervisor does with each message.
 *
 * A table maps msg_type to a handler and says who answers it: the supervisor
 * itself (kernel_info, history, shutdown, interrupt, subshells: things that
 * must work while a cell runs, or that need no Python), or the worker. Status
 * busy and idle are published in exactly two functions, begin() and end(), and
 * every path through this file goes through both, once, in that order.
 *
 * Requests for the worker wait in the queue of their shell: the main shell,
 * or a subshell named by the header's subshell_id (JEP 91). Each shell has at
 * most one request in the worker at a time; subshells run theirs in threads
 * of their own, so a long cell does not hold up a quick one elsewhere.
 * Control requests for the worker jump the main queue.
 *
 * Whatever the worker sends back is untrusted: its frames are checked here
 * before anything reaches a client. Each event names the request it belongs
 * to (its msg_id), which gives it its parent header, even for output from a
 * thread that a cell started and that outlived the cell. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "kernel/log.h"
#include "sandbox/sandbox.h"

#define DISPATCH_INTERRUPT_GRACE_S                                                       \
    5.0 /* after an interrupt, how long a cell has to stop */

typedef void (*handler_fn)(struct kernel *k, struct request *req);

struct handler {
    const char *msg_type;
    handler_fn fn;   /* supervisor handlers; NULL: the worker answers */
    bool for_worker; /* queued for the worker */
};

void request_free(struct request *r)
{
    if (!r)
        return;
    msg_free(r->msg);
    free(r);
}

static void begin(struct kernel *k, const struct request *req)
{
    kernel_publish_status(k, req, "busy");
}

static void end(struct kernel *k, const struct request *req)
{
    kernel_publish_status(k, req, "idle");
}

static const char *reply_type(const struct request *req, char *buf, size_t len)
{
    const char *t = msg_type(req->msg);
    size_t n = strlen(t);
    if (n > 8 && strcmp(t + n - 8, "_request") == 0)
        snprintf(buf, len, "%.*s_reply", (int)(n - 8), t);
    else
        snprintf(buf, len, "%s_reply", t);
    return buf;
}

static json_t *reply_metadata(struct kernel *k, const char *status)
{
    char date[40];
    msg_date_now(date, sizeof date);
    return json_pack("{s:s, s:b, s:s, s:s}", "started", date, "dependencies_met", 1,
                     "engine", k->session.session, "status", status);
}

/* An error reply: for an execute_request it has the execution count and an
 * (empty-stack) traceback, as clients expect of any error reply. */
static void reply_error(struct kernel *k, const struct request *req, const char *ename,
                        const char *evalue)
{
    char type[96];
    json_t *c = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename,
                          "evalue", evalue, "traceback");
    if (c && strcmp(msg_type(req->msg), "execute_request") == 0) {
        json_object_set_new(c, "execution_count", json_integer(req->execution_count));
        json_object_set_new(c, "user_expressions", json_object());
        json_object_set_new(c, "payload", json_array());
    }
    kernel_reply(k, req, reply_type(req, type, sizeof type), &c,
                 reply_metadata(k, "error"));
}

/* --- handlers the supervisor answers ------------------------------------------ */

/* Before the first worker is ready, the layers are named, none claimed. */
static json_t *pending_layers(struct kernel *k)
{
    struct sandbox_report r;
    memset(&r, 0, sizeof r);
    sandbox_report_init(&r);
    json_t *layers = json_array();
    for (size_t i = 0; i < r.n; i++)
        json_array_append_new(
            layers,
            json_pack(
                "{s:s, s:s, s:s}", "name", r.layers[i].name, "state",
                sandbox_state_name(k->opts->sandbox ? SANDBOX_PENDING : SANDBOX_DISABLED),
                "detail", k->opts->sandbox ? "the worker is starting" : "--sandbox off"));
    return layers;
}

static json_t *sandbox_summary(struct kernel *k)
{
    json_t *s =
        json_pack("{s:b, s:b, s:s, s:f, s:I, s:I, s:I}", "enabled", k->opts->sandbox,
                  "network", k->opts->network, "workspace", k->workspace, "timeout",
                  k->opts->timeout_s, "memory_mib", (json_int_t)k->opts->memory_mib,
                  "max_output_bytes", (json_int_t)k->opts->max_output, "max_file_mib",
                  (json_int_t)k->opts->max_file_mib);
    if (s)
        json_object_set_new(s, "layers",
                            k->sandbox_report ? json_incref(k->sandbox_report)
                                              : pending_layers(k));
    return s;
}

static void handle_kernel_info(struct kernel *k, struct request *req)
{
    char banner[1024];
    int n = snprintf(banner, sizeof banner,
                     "Python %s in sandpit %s, a sandboxed Jupyter kernel\n",
                     k->python_version, SANDPIT_VERSION);
    if (!k->opts->sandbox)
        snprintf(banner + n, sizeof banner - (size_t)n,
                 "WARNING: the sandbox is off: code runs with all the rights of the user "
                 "who started the kernel.\n");
    json_t *c = json_pack(
        "{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:i}, s:s, s:s, s:s}, s:s, "
        "s:[{s:s, s:s}], s:b, s:[s]}",
        "status", "ok", "protocol_version", MSG_PROTOCOL_VERSION, "implementation",
        "sandpit", "implementation_version", SANDPIT_VERSION, "language_info", "name",
        "python", "version", k->python_version, "mimetype", "text/x-python",
        "codemirror_mode", "name", "ipython", "version", 3, "pygments_lexer", "ipython3",
        "nbconvert_exporter", "python", "file_extension", ".py", "banner", banner,
        "help_links", "text", "Python Reference", "url", "https://docs.python.org/3.11/",
        "debugger", 0, "supported_features", "kernel subshells");
    if (c)
        json_object_set_new(c, "sandpit", sandbox_summary(k));
    kernel_reply(k, req, "kernel_info_reply", &c, NULL);
}

static void handle_history(struct kernel *k, struct request *req)
{
    char err[256];
    json_t *list = history_query(&k->history, req->msg->content, err, sizeof err);
    if (!list) {
        reply_error(k, req, "ValueError", err);
        return;
    }
    json_t *c = json_pack("{s:s, s:o}", "status", "ok", "history", list);
    kernel_reply(k, req, "history_reply", &c, NULL);
}

/* --- shells and their queues ------------------------------------------------ */

void dispatch_init(struct kernel *k)
{
    memset(k->shells, 0, sizeof k->shells);
    k->nshells = 1; /* the main shell, id "" */
}

static struct shell *find_shell(struct kernel *k, const char *id)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (strcmp(k->shells[i].id, id) == 0)
            return &k->shells[i];
    return NULL;
}

static void enqueue(struct shell *sh, struct request *r, bool front)
{
    if (front) {
        r->next = sh->queue_head;
        sh->queue_head = r;
        if (!sh->queue_tail)
            sh->queue_tail = r;
    } else {
        r->next = NULL;
        if (sh->queue_tail)
            sh->queue_tail->next = r;
        else
            sh->queue_head = r;
        sh->queue_tail = r;
    }
}

static struct request *dequeue(struct shell *sh)
{
    struct request *r = sh->queue_head;
    if (r) {
        sh->queue_head = r->next;
        if (!sh->queue_head)
            sh->queue_tail = NULL;
        r->next = NULL;
    }
    return r;
}

/* Requests that get no reply on the shell channel, only busy and idle. */
static bool has_reply(const struct request *r)
{
    return strncmp(msg_type(r->msg), "comm_", 5) != 0 ||
           strcmp(msg_type(r->msg), "comm_info_request") == 0;
}

static void send_aborted(struct kernel *k, struct request *r)
{
    char type[96];
    begin(k, r);
    if (has_reply(r)) {
        json_t *c = json_pack("{s:s}", "status", "aborted");
        kernel_reply(k, r, reply_type(r, type, sizeof type), &c,
                     reply_metadata(k, "aborted"));
    }
    end(k, r);
}

/* After an error with stop_on_error, the execute requests already waiting in
 * that shell are answered "aborted" without running, as ipykernel does; other
 * requests (completion, inspection) still run. With everything, all requests
 * waiting in the shell go (restart, deletion of a subshell). */
static void abort_queued(struct kernel *k, struct shell *sh, bool everything)
{
    struct request **p = &sh->queue_head, *last = NULL;
    while (*p) {
        struct request *r = *p;
        if (everything || strcmp(msg_type(r->msg), "execute_request") == 0) {
            *p = r->next;
            log_info("aborting %s %s", msg_type(r->msg), msg_id(r->msg));
            send_aborted(k, r);
            request_free(r);
        } else {
            last = r;
            p = &r->next;
        }
    }
    sh->queue_tail = last;
}

static void remember_parent(struct kernel *k, const struct request *r)
{
    json_decref(k->recent[k->recent_next]);
    k->recent[k->recent_next] = json_incref(r->msg->header);
    k->recent_next = (k->recent_next + 1) % KERNEL_RECENT_PARENTS;
}

/* The request running with this msg_id, if any. */
static struct request *running(struct kernel *k, const char *id)
{
    for (size_t i = 0; id && i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (r && strcmp(msg_id(r->msg), id) == 0)
            return r;
    }
    return NULL;
}

/* The header of a request the worker ran lately, by msg_id (borrowed). */
static json_t *recent_header(struct kernel *k, const char *id)
{
    for (size_t i = 0; id && i < KERNEL_RECENT_PARENTS; i++) {
        json_t *h = k->recent[(k->recent_next + KERNEL_RECENT_PARENTS - 1 - i) %
                              KERNEL_RECENT_PARENTS];
        const char *hid = json_string_value(json_object_get(h, "msg_id"));
        if (hid && strcmp(hid, id) == 0)
            return h;
    }
    return NULL;
}

bool dispatch_any_running(const struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (k->shells[i].current)
            return true;
    return false;
}

void dispatch_release(struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++) {
        struct shell *sh = &k->shells[i];
        struct request *r;
        while ((r = dequeue(sh)))
            request_free(r);
        request_free(sh->current);
        sh->current = NULL;
    }
    for (size_t i = 0; i < KERNEL_RECENT_PARENTS; i++) {
        json_decref(k->recent[i]);
        k->recent[i] = NULL;
    }
}

/* --- handlers the supervisor answers (continued) ------------------------------- */

static void handle_shutdown(struct kernel *k, struct request *req)
{
    bool restart = json_is_true(json_object_get(req->msg->content, "restart"));
    json_t *c = json_pack("{s:s, s:b}", "status", "ok", "restart", restart);
    kernel_reply(k, req, "shutdown_reply", &c, NULL);
    if (!restart) {
        log_info("shutdown requested");
        k->running = false;
        return;
    }
    log_info("restart requested");
    for (size_t i = 0; i < k->nshells; i++)
        abort_queued(k, &k->shells[i], true);
    history_new_session(&k->history);
    k->execution_count = 0;
    kernel_restart_worker(k, "The kernel was restarted while this cell was running.");
}

static void handle_interrupt(struct kernel *k, struct request *req)
{
    kernel_interrupt(k, "interrupt requested");
    json_t *c = json_pack("{s:s}", "status", "ok");
    kernel_reply(k, req, "interrupt_reply", &c, NULL);
}

static void handle_create_subshell(struct kernel *k, struct request *req)
{
    if (k->nshells == KERNEL_MAX_SHELLS) {
        char why[96];
        snprintf(why, sizeof why, "at most %d subshells can exist at once",
                 KERNEL_MAX_SHELLS - 1);
        reply_error(k, req, "RuntimeError", why);
        return;
    }
    struct msg_session ids;
    msg_session_init(&ids, NULL); /* a fresh UUID */
    struct shell *sh = &k->shells[k->nshells++];
    memset(sh, 0, sizeof *sh);
    snprintf(sh->id, sizeof sh->id, "%s", ids.session);
    json_t *w =
        json_pack("{s:s, s:s, s:s}", "type", "subshell", "op", "create", "id", sh->id);
    if (w)
        kernel_send_worker(k, w, NULL);
    json_decref(w);
    log_info("created subshell %s", sh->id);
    json_t *c = json_pack("{s:s, s:s}", "status", "ok", "subshell_id", sh->id);
    kernel_reply(k, req, "create_subshell_reply", &c, NULL);
}

static void delete_shell(struct kernel *k, struct shell *sh, const char *why)
{
    abort_queued(k, sh, true);
    if (sh->current) {
        /* Its thread is told to stop; the running request gets its answer now. */
        struct request *r = sh->current;
        sh->current = NULL;
        reply_error(k, r, "SubshellDeleted", why);
        end(k, r);
        request_free(r);
    }
    json_t *w =
        json_pack("{s:s, s:s, s:s}", "type", "subshell", "op", "delete", "id", sh->id);
    if (w && k->child.fd >= 0)
        kernel_send_worker(k, w, NULL);
    json_decref(w);
    size_t i = (size_t)(sh - k->shells);
    memmove(&k->shells[i], &k->shells[i + 1], (k->nshells - i - 1) * sizeof *sh);
    k->nshells--;
}

static void handle_delete_subshell(struct kernel *k, struct request *req)
{
    const char *id = json_string_value(json_object_get(req->msg->content, "subshell_id"));
    struct shell *sh = id && *id ? find_shell(k, id) : NULL;
    if (!sh) {
        reply_error(k, req, "KeyError", "no subshell with that subshell_id");
        return;
    }
    log_info("deleting subshell %s", id);
    delete_shell(k, sh, "The subshell running this request was deleted.");
    json_t *c = json_pack("{s:s}", "status", "ok");
    kernel_reply(k, req, "delete_subshell_reply", &c, NULL);
}

static void handle_list_subshell(struct kernel *k, struct request *req)
{
    json_t *ids = json_array();
    for (size_t i = 1; i < k->nshells; i++)
        json_array_append_new(ids, json_string(k->shells[i].id));
    json_t *c = json_pack("{s:s, s:o}", "status", "ok", "subshell_id", ids);
    kernel_reply(k, req, "list_subshell_reply", &c, NULL);
}

static const struct handler handlers[] = {
    {"kernel_info_request", handle_kernel_info, false},
    {"history_request", handle_history, false},
    {"shutdown_request", handle_shutdown, false},
    {"interrupt_request", handle_interrupt, false},
    {"create_subshell_request", handle_create_subshell, false},
    {"delete_subshell_request", handle_delete_subshell, false},
    {"list_subshell_request", handle_list_subshell, false},
    {"execute_request", NULL, true},
    {"is_complete_request", NULL, true},
    {"complete_request", NULL, true},
    {"inspect_request", NULL, true},
    {"comm_info_request", NULL, true},
    /* Comm messages from the front end: the worker handles them; no reply. */
    {"comm_open", NULL, true},
    {"comm_msg", NULL, true},
    {"comm_close", NULL, true},
};

static const struct handler *find_handler(const char *type)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].msg_type, type) == 0)
            return &handlers[i];
    return NULL;
}

/* --- running requests --------------------------------------------------------- */

/* Reads execute_request's flags; false (with an error reply sent) when the
 * content is not an execute request a kernel can run. */
static bool prepare_execute(struct kernel *k, struct request *r)
{
    json_t *c = r->msg->content;
    if (!json_is_string(json_object_get(c, "code"))) {
        begin(k, r);
        reply_error(k, r, "ValueError", "execute_request has no \"code\" string");
        end(k, r);
        return false;
    }
    json_t *v;
    r->silent = json_is_true(json_object_get(c, "silent"));
    v = json_object_get(c, "store_history");
    r->store_history = !r->silent && (v ? json_is_true(v) : true);
    v = json_object_get(c, "stop_on_error");
    r->stop_on_error = v ? json_is_true(v) : true;
    r->timeout_s = k->opts->timeout_s;
    /* A request may tighten the time limit, never loosen it. */
    json_t *t = json_object_get(json_object_get(r->msg->metadata, "sandpit"), "timeout");
    if (json_is_number(t) && json_number_value(t) > 0 &&
        (r->timeout_s == 0 || json_number_value(t) < r->timeout_s))
        r->timeout_s = json_number_value(t);
    return true;
}

static void start_request(struct kernel *k, struct shell *sh, struct request *r)
{
    begin(k, r);
    bool execute = strcmp(msg_type(r->msg), "execute_request") == 0;
    const char *code = json_string_value(json_object_get(r->msg->content, "code"));
    if (execute) {
        if (r->store_history) {
            k->execution_count++;
            history_add(&k->history, k->execution_count, code);
        }
        r->execution_count = k->execution_count + (r->store_history ? 0 : 1);
        if (!r->silent) {
            json_t *c = json_pack("{s:s, s:i}", "code", code, "execution_count",
                                  r->execution_count);
            kernel_publish(k, r->msg->header, "execute_input", &c);
        }
    }
    json_t *w = json_pack(
        "{s:s, s:s, s:s, s:O, s:O, s:O, s:i, s:b, s:b, s:f, s:I}", "type", "request",
        "shell", sh->id, "msg_type", msg_type(r->msg), "header", r->msg->header,
        "content", r->msg->content, "metadata", r->msg->metadata, "execution_count",
        r->execution_count, "silent", r->silent, "store_history", r->store_history,
        "timeout", r->timeout_s, "max_output", (json_int_t)k->opts->max_output);
    sh->current = r;
    r->sent_at = kernel_now();
    remember_parent(k, r);
    if (!w || kernel_send_worker(k, w, r->msg) != 0)
        log_warn("the request %s did not reach the worker", msg_id(r->msg));
    json_decref(w);
}

void dispatch_pump(struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++) {
        struct shell *sh = &k->shells[i];
        while (!sh->current && sh->queue_head) {
            if (k->child.state == CHILD_READY) {
                start_request(k, sh, dequeue(sh));
            } else if (k->child.state == CHILD_DOWN && k->restart_at) {
                /* Workers keep failing to start: answer rather than leave clients
                 * waiting. */
                struct request *r = dequeue(sh);
                begin(k, r);
                if (has_reply(r))
                    reply_error(
                        k, r, "WorkerUnavailable",
                        "The Python worker cannot start; the kernel log says why. "
                        "sandpit keeps trying to start it.");
                end(k, r);
                request_free(r);
            } else {
                break;
            }
        }
    }
}

void dispatch_msg(struct kernel *k, struct msg **m, enum connection_channel ch)
{
    struct request *r = calloc(1, sizeof *r);
    if (!r) {
        log_error("out of memory: dropped a %s", msg_type(*m));
        return;
    }
    r->msg = *m;
    *m = NULL;
    r->channel = ch;
    const char *type = msg_type(r->msg);
    log_debug("%s %s on %s", type, msg_id(r->msg), connection_channel_name(ch));
    const struct handler *h = find_handler(type);
    if (!h) {
        size_t n = strlen(type);
        log_warn("unknown message type %s on %s", type, connection_channel_name(ch));
        begin(k, r);
        if (n > 8 && strcmp(type + n - 8, "_request") == 0) {
            char why[160];
            snprintf(why, sizeof why, "sandpit does not handle %.100s", type);
            reply_error(k, r, "NotImplementedError", why);
        }
        end(k, r);
        request_free(r);
        return;
    }
    if (!h->for_worker) {
        begin(k, r);
        h->fn(k, r);
        end(k, r);
        request_free(r);
        return;
    }
    const char *sub = json_string_value(json_object_get(r->msg->header, "subshell_id"));
    struct shell *sh = find_shell(k, sub ? sub : "");
    if (!sh) {
        begin(k, r);
        if (has_reply(r))
            reply_error(k, r, "KeyError",
                        "no subshell with the subshell_id in this request's header");
        end(k, r);
        request_free(r);
        return;
    }
    snprintf(r->shell_id, sizeof r->shell_id, "%s", sh->id);
    if (strcmp(type, "execute_request") == 0 && !prepare_execute(k, r)) {
        request_free(r);
        return;
    }
    enqueue(sh, r, ch == CONNECTION_CONTROL);
    dispatch_pump(k);
}

void dispatch_unreadable(struct kernel *k, struct msg *m, enum connection_channel ch,
                         const char *why)
{
    const char *type = msg_type(m);
    size_t n = strlen(type);
    if (ch == CONNECTION_STDIN || n <= 8 || strcmp(type + n - 8, "_request") != 0)
        return; /* no reply is due */
    struct request r = {.msg = m, .channel = ch};
    char text[320];
    snprintf(text, sizeof text, "the kernel could not read this request: %s", why);
    begin(k, &r);
    reply_error(k, &r, "ValueError", text);
    end(k, &r);
}

/* --- time limits and interrupts ---------------------------------------------------- */

static void arm_escalation(struct request *r)
{
    double deadline = kernel_now() + DISPATCH_INTERRUPT_GRACE_S;
    if (!r->interrupt_deadline || deadline < r->interrupt_deadline)
        r->interrupt_deadline = deadline;
}

/* The main shell's request is interrupted with SIGINT (Python raises
 * KeyboardInterrupt in the main thread); a subshell's, with a note on which
 * the worker raises it in that subshell's thread. A note with reason
 * "timeout" makes the worker report the time limit rather than the interrupt. */
static void interrupt_request(struct kernel *k, struct shell *sh, bool timeout)
{
    struct request *r = sh->current;
    if (!r || k->child.state != CHILD_READY)
        return;
    {
        json_t *note =
            json_pack("{s:s, s:s, s:s, s:s, s:f}", "type", "interrupt", "shell", sh->id,
                      "parent", msg_id(r->msg), "reason",
                      timeout ? "timeout" : "interrupt", "limit", r->timeout_s);
        if (note)
            kernel_send_worker(k, note, NULL);
        json_decref(note);
    }
    if (sh == &k->shells[0])
        child_signal(&k->child, SIGINT);
    arm_escalation(r);
}

void kernel_interrupt(struct kernel *k, const char *reason)
{
    if (!dispatch_any_running(k))
        return;
    log_info("interrupting the worker (%s)", reason);
    for (size_t i = 0; i < k->nshells; i++)
        interrupt_request(k, &k->shells[i], false);
}

double dispatch_next_deadline(const struct kernel *k)
{
    double next = 0;
    for (size_t i = 0; i < k->nshells; i++) {
        const struct request *r = k->shells[i].current;
        if (!r)
            continue;
        double t = 0;
        if (r->timeout_s > 0 && !r->interrupted_for_timeout)
            t = r->sent_at + r->timeout_s;
        if (r->interrupt_deadline && (!t || r->interrupt_deadline < t))
            t = r->interrupt_deadline;
        if (t && (!next || t < next))
            next = t;
    }
    return next;
}

void dispatch_check_timers(struct kernel *k, double now)
{
    for (size_t i = 0; i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (!r)
            continue;
        if (r->timeout_s > 0 && !r->interrupted_for_timeout &&
            now - r->sent_at > r->timeout_s) {
            log_info("%s %s reached its time limit of %g s", msg_type(r->msg),
                     msg_id(r->msg), r->timeout_s);
            r->interrupted_for_timeout = true;
            interrupt_request(k, &k->shells[i], true);
        }
        if (r->interrupt_deadline && now > r->interrupt_deadline) {
            char why[512];
            if (r->interrupted_for_timeout)
                snprintf(
                    why, sizeof why,
                    "The cell exceeded its time limit of %g s and did not stop when "
                    "interrupted, so its worker was restarted: variables and imports "
                    "from earlier cells are lost.",
                    r->timeout_s);
            else
                snprintf(
                    why, sizeof why,
                    "The cell did not stop within %.0f s of the interrupt (it was "
                    "probably inside a long call to compiled code), so its worker was "
                    "restarted: variables and imports from earlier cells are lost.",
                    DISPATCH_INTERRUPT_GRACE_S);
            log_warn("%s", why);
            kernel_restart_worker(k, why);
            return;
        }
    }
}

/* --- events from the worker ----------------------------------------------------- */

static void finish_request(struct kernel *k, struct shell *sh, json_t *content,
                           json_t *metadata)
{
    struct request *r = sh->current;
    sh->current = NULL;
    char type[96];
    bool execute = strcmp(msg_type(r->msg), "execute_request") == 0;
    /* The worker drops stream output past the cap before it reaches the link;
     * it reports how much, and the supervisor says it once, with its own count. */
    json_t *wd = json_object_get(content, "sandpit_dropped");
    if (json_is_integer(wd) && json_integer_value(wd) > 0)
        r->dropped_bytes += (unsigned long)json_integer_value(wd);
    if (r->dropped_bytes) {
        char line[256];
        snprintf(
            line, sizeof line,
            "\n[sandpit: output limit of %lu bytes reached; %lu more bytes of output "
            "were dropped]\n",
            k->opts->max_output, r->dropped_bytes);
        json_t *c = json_pack("{s:s, s:s}", "name", "stderr", "text", line);
        kernel_publish(k, r->msg->header, "stream", &c);
    }
    json_t *c = json_is_object(content) ? json_deep_copy(content) : json_object();
    json_object_del(c, "sandpit_dropped");
    const char *status = json_string_value(json_object_get(c, "status"));
    if (!status) {
        json_object_set_new(c, "status", json_string("error"));
        status = "error";
    }
    if (execute)
        json_object_set_new(c, "execution_count", json_integer(r->execution_count));
    json_t *md = reply_metadata(k, status);
    if (md && json_is_object(metadata))
        json_object_update(md, metadata);
    bool failed = strcmp(status, "error") == 0;
    if (has_reply(r)) {
        kernel_reply(k, r, reply_type(r, type, sizeof type), &c, md);
    } else {
        json_decref(c);
        json_decref(md);
    }
    end(k, r);
    if (execute && failed && r->stop_on_error && !r->silent)
        abort_queued(k, sh, false);
    request_free(r);
}

static void lose_request(struct kernel *k, struct request *r, const char *why)
{
    const char *ename = r->interrupted_for_timeout ? "TimeoutError" : "WorkerDied";
    log_warn("%s %s: %s", msg_type(r->msg), msg_id(r->msg), why);
    bool execute = strcmp(msg_type(r->msg), "execute_request") == 0;
    if (execute && !r->silent) {
        char line[1024];
        snprintf(line, sizeof line, "\033[0;31m%s\033[0m: %s", ename, why);
        json_t *c = json_pack("{s:s, s:s, s:[s]}", "ename", ename, "evalue", why,
                              "traceback", line);
        kernel_publish(k, r->msg->header, "error", &c);
    }
    if (has_reply(r))
        reply_error(k, r, ename, why);
    end(k, r);
}

void dispatch_worker_lost(struct kernel *k, const char *why)
{
    k->input_parent[0] = 0;
    /* Subshells lived in the worker's threads: they are gone with it. */
    while (k->nshells > 1)
        delete_shell(k, &k->shells[k->nshells - 1],
                     "The worker process was restarted, and the subshell with it.");
    struct shell *main_shell = &k->shells[0];
    struct request *r = main_shell->current;
    if (!r)
        return;
    main_shell->current = NULL;
    lose_request(k, r, why);
    if (strcmp(msg_type(r->msg), "execute_request") == 0 && r->stop_on_error &&
        !r->silent)
        abort_queued(k, main_shell, false);
    request_free(r);
}

/* Output to the client counts against the cell's cap; past it, output is
 * dropped (and counted) rather than sent or kept. */
static bool within_cap(struct kernel *k, struct request *r, const char *type,
                       json_t *content)
{
    if (!r || !k->opts->max_output)
        return true;
    size_t bytes = 0;
    if (strcmp(type, "stream") == 0) {
        bytes = json_string_length(json_object_get(content, "text"));
    } else if (strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0 ||
               strcmp(type, "update_display_data") == 0) {
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(content, "data"), key, v)
        {
            bytes += json_is_string(v) ? json_string_length(v) : 64;
        }
    } else {
        return true;
    }
    if (r->dropped_bytes || r->output_bytes + bytes > k->opts->max_output) {
        /* A stream is cut at the cap, so the user sees output up to it. */
        if (!r->dropped_bytes && strcmp(type, "stream") == 0) {
            size_t room = k->opts->max_output - r->output_bytes;
            const char *text = json_string_value(json_object_get(content, "text"));
            while (room > 0 && ((unsigned char)text[room] & 0xC0) == 0x80)
                room--; /* do not split a UTF-8 sequence */
            if (room > 0) {
                json_object_set_new(content, "text", json_stringn(text, room));
                r->output_bytes += room;
                r->dropped_bytes += bytes - room;
                return true;
            }
        }
        r->dropped_bytes += bytes;
        return false;
    }
    r->output_bytes += bytes;
    return true;
}

static const char *const iopub_types[] = {
    "stream",         "display_data", "update_display_data",
    "execute_result", "error",        "clear_output",
    "comm_open",      "comm_msg",     "comm_close",
};

static void worker_iopub(struct kernel *k, json_t *obj, struct link_frame *f)
{
    const char *type = json_string_value(json_object_get(obj, "msg_type"));
    json_t *content = json_object_get(obj, "content");
    bool known = false;
    for (size_t i = 0; type && i < sizeof iopub_types / sizeof iopub_types[0]; i++)
        known |= strcmp(type, iopub_types[i]) == 0;
    if (!known || !json_is_object(content)) {
        log_warn("the worker sent an iopub message that is not one: %.60s",
                 type ? type : "(no msg_type)");
        return;
    }
    /* Its parent: the request it names (running, or run lately), else the main
     * shell's running request. */
    const char *pid = json_string_value(json_object_get(obj, "parent"));
    struct request *r = running(k, pid);
    json_t *parent = r ? r->msg->header : recent_header(k, pid);
    if (!parent && !pid && (r = k->shells[0].current))
        parent = r->msg->header;
    if (!within_cap(k, r, type, content))
        return;
    if (r && strcmp(type, "execute_result") == 0 && r->store_history) {
        const char *text = json_string_value(
            json_object_get(json_object_get(content, "data"), "text/plain"));
        if (text)
            history_set_output(&k->history, r->execution_count, text);
    }
    json_t *c = json_incref(content);
    struct msg *m = msg_make(&k->session, type, NULL, &c, false);
    if (!m)
        return;
    json_t *md = json_object_get(obj, "metadata");
    if (json_is_object(md)) {
        json_decref(m->metadata);
        m->metadata = json_incref(md);
    }
    if (parent) {
        json_decref(m->parent_header);
        m->parent_header = json_incref(parent);
    }
    for (size_t i = 0; i < f->nbuffers; i++)
        msg_add_buffer(m, f->buffers[i].data, f->buffers[i].len);
    char topic[160];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session.session, type);
    msg_add_ident(m, topic, strlen(topic));
    kernel_send(k, CONNECTION_IOPUB, m);
    msg_free(m);
}

static void worker_hello(struct kernel *k, json_t *obj)
{
    /* Only a starting worker says hello: once cells run, the link is in reach
     * of the user's code, which must not rewrite the sandbox's report. */
    if (k->child.state != CHILD_STARTING) {
        log_warn("a hello from a worker that is already running: ignored");
        return;
    }
    const char *v = json_string_value(json_object_get(obj, "python_version"));
    if (v)
        snprintf(k->python_version, sizeof k->python_version, "%s", v);
    json_t *report = json_object_get(obj, "sandbox");
    if (report) {
        json_decref(k->sandbox_report);
        k->sandbox_report = json_incref(report);
    }
    if (k->child.state == CHILD_STARTING) {
        k->child.state = CHILD_READY;
        k->start_failures = 0;
        log_info("worker %d ready in %.0f ms", (int)k->child.pid,
                 (kernel_now() - k->child.started_at) * 1000);
    }
}

static void worker_reply(struct kernel *k, json_t *obj)
{
    const char *id = json_string_value(json_object_get(obj, "shell"));
    struct shell *sh = find_shell(k, id ? id : "");
    if (!sh || !sh->current) {
        log_warn("the worker sent a reply with no request running in its shell");
        return;
    }
    if (k->input_parent[0] && strcmp(k->input_parent, msg_id(sh->current->msg)) == 0)
        k->input_parent[0] = 0;
    finish_request(k, sh, json_object_get(obj, "content"),
                   json_object_get(obj, "metadata"));
}

static void worker_input_request(struct kernel *k, json_t *obj)
{
    json_t *content = json_object_get(obj, "content");
    const char *pid = json_string_value(json_object_get(obj, "parent"));
    struct request *r = pid ? running(k, pid) : k->shells[0].current;
    if (!r || !json_is_object(content)) {
        log_warn("the worker asked for input with no request running");
        return;
    }
    snprintf(k->input_parent, sizeof k->input_parent, "%s", msg_id(r->msg));
    json_t *c = json_incref(content);
    struct msg *m = msg_make(&k->session, "input_request", r->msg, &c, true);
    if (!m)
        return;
    kernel_send(k, CONNECTION_STDIN, m);
    msg_free(m);
}

void dispatch_worker_frame(struct kernel *k, struct link_frame *f)
{
    json_error_t jerr;
    json_t *obj = json_loadb(f->json, f->json_len, 0, &jerr);
    const char *type = json_string_value(json_object_get(obj, "type"));
    if (!type)
        log_warn("the worker sent a frame that is not a message: %s", jerr.text);
    else if (strcmp(type, "iopub") == 0)
        worker_iopub(k, obj, f);
    else if (strcmp(type, "reply") == 0)
        worker_reply(k, obj);
    else if (strcmp(type, "hello") == 0)
        worker_hello(k, obj);
    else if (strcmp(type, "input_request") == 0)
        worker_input_request(k, obj);
    else
        log_warn("the worker sent an unknown frame type %.40s", type);
    json_decref(obj);
}

void dispatch_stdin(struct kernel *k, struct msg **m)
{
    const char *type = msg_type(*m);
    if (strcmp(type, "input_reply") != 0) {
        log_warn("unexpected %s on stdin", type);
        return;
    }
    if (!k->input_parent[0] || !running(k, k->input_parent)) {
        log_warn("an input_reply came with no cell waiting for input");
        return;
    }
    json_t *w = json_pack("{s:s, s:s, s:O}", "type", "input_reply", "parent",
                          k->input_parent, "content", (*m)->content);
    k->input_parent[0] = 0;
    if (w)
        kernel_send_worker(k, w, NULL);
    json_decref(w);
}
