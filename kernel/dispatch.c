/* dispatch: what the supervisor does with each message.
 *
 * A table maps msg_type to a handler and says who answers it: the supervisor
 * itself (kernel_info, history, shutdown, interrupt: things that must work
 * while a cell runs, or that need no Python), or the worker. Status busy and
 * idle are published in exactly two functions, begin() and end(), and every
 * path through this file goes through both, once, in that order.
 *
 * Requests for the worker wait in a queue and go one at a time; control
 * requests for the worker jump the queue. Whatever the worker sends back is
 * untrusted: its frames are checked here before anything reaches a client. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "kernel/log.h"

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

static json_t *sandbox_summary(struct kernel *k)
{
    json_t *s =
        json_pack("{s:b, s:b, s:s, s:f, s:I, s:I, s:I}", "enabled", k->opts->sandbox,
                  "network", k->opts->network, "workspace", k->workspace, "timeout",
                  k->opts->timeout_s, "memory_mib", (json_int_t)k->opts->memory_mib,
                  "max_output_bytes", (json_int_t)k->opts->max_output, "max_file_mib",
                  (json_int_t)k->opts->max_file_mib);
    if (s)
        json_object_set(s, "layers", k->sandbox_report ? k->sandbox_report : json_null());
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
        "s:[{s:s, s:s}], s:b}",
        "status", "ok", "protocol_version", MSG_PROTOCOL_VERSION, "implementation",
        "sandpit", "implementation_version", SANDPIT_VERSION, "language_info", "name",
        "python", "version", k->python_version, "mimetype", "text/x-python",
        "codemirror_mode", "name", "ipython", "version", 3, "pygments_lexer", "ipython3",
        "nbconvert_exporter", "python", "file_extension", ".py", "banner", banner,
        "help_links", "text", "Python Reference", "url", "https://docs.python.org/3.11/",
        "debugger", 0);
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

static void abort_queued(struct kernel *k, bool everything);

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
    abort_queued(k, true);
    history_new_session(&k->history);
    k->execution_count = 0;
    kernel_restart_worker(k, "The kernel was restarted while this cell was running.");
}

static void handle_interrupt(struct kernel *k, struct request *req)
{
    kernel_interrupt(k);
    json_t *c = json_pack("{s:s}", "status", "ok");
    kernel_reply(k, req, "interrupt_reply", &c, NULL);
}

static const struct handler handlers[] = {
    {"kernel_info_request", handle_kernel_info, false},
    {"history_request", handle_history, false},
    {"shutdown_request", handle_shutdown, false},
    {"interrupt_request", handle_interrupt, false},
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

/* Requests that get no reply on the shell channel, only busy and idle. */
static bool has_reply(const struct request *r)
{
    return strncmp(msg_type(r->msg), "comm_", 5) != 0 ||
           strcmp(msg_type(r->msg), "comm_info_request") == 0;
}

static const struct handler *find_handler(const char *type)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].msg_type, type) == 0)
            return &handlers[i];
    return NULL;
}

/* --- the queue ------------------------------------------------------------------- */

static void enqueue(struct kernel *k, struct request *r, bool front)
{
    if (front) {
        r->next = k->queue_head;
        k->queue_head = r;
        if (!k->queue_tail)
            k->queue_tail = r;
    } else {
        r->next = NULL;
        if (k->queue_tail)
            k->queue_tail->next = r;
        else
            k->queue_head = r;
        k->queue_tail = r;
    }
}

static struct request *dequeue(struct kernel *k)
{
    struct request *r = k->queue_head;
    if (r) {
        k->queue_head = r->next;
        if (!k->queue_head)
            k->queue_tail = NULL;
        r->next = NULL;
    }
    return r;
}

static bool has_reply(const struct request *r);

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

/* After an error with stop_on_error, the execute requests already waiting are
 * answered "aborted" without running, as ipykernel does; other requests
 * (completion, inspection) still run. On restart, everything waiting goes. */
static void abort_queued(struct kernel *k, bool everything)
{
    struct request **p = &k->queue_head, *last = NULL;
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
    k->queue_tail = last;
}

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

static void start_request(struct kernel *k, struct request *r)
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
        "{s:s, s:s, s:O, s:O, s:O, s:i, s:b, s:b, s:f, s:I}", "type", "request",
        "msg_type", msg_type(r->msg), "header", r->msg->header, "content",
        r->msg->content, "metadata", r->msg->metadata, "execution_count",
        r->execution_count, "silent", r->silent, "store_history", r->store_history,
        "timeout", r->timeout_s, "max_output", (json_int_t)k->opts->max_output);
    k->current = r;
    k->child.state = CHILD_BUSY;
    r->sent_at = kernel_now();
    json_decref(k->last_parent);
    k->last_parent = json_incref(r->msg->header);
    if (!w || kernel_send_worker(k, w, r->msg) != 0)
        log_warn("the request %s did not reach the worker", msg_id(r->msg));
    json_decref(w);
}

void dispatch_pump(struct kernel *k)
{
    while (!k->current && k->queue_head) {
        if (k->child.state == CHILD_READY) {
            start_request(k, dequeue(k));
        } else if (k->child.state == CHILD_DOWN && k->restart_at) {
            /* Workers keep failing to start: answer rather than leave clients waiting. */
            struct request *r = dequeue(k);
            begin(k, r);
            reply_error(k, r, "WorkerUnavailable",
                        "The Python worker cannot start; the kernel log says why. "
                        "sandpit keeps trying to start it.");
            end(k, r);
            request_free(r);
        } else {
            break;
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
    if (strcmp(type, "execute_request") == 0 && !prepare_execute(k, r)) {
        request_free(r);
        return;
    }
    enqueue(k, r, ch == CONNECTION_CONTROL);
    dispatch_pump(k);
}

/* --- events from the worker ----------------------------------------------------- */

static void finish_request(struct kernel *k, json_t *content, json_t *metadata)
{
    struct request *r = k->current;
    k->current = NULL;
    if (k->child.state == CHILD_BUSY)
        k->child.state = CHILD_READY;
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
        abort_queued(k, false);
    request_free(r);
}

void dispatch_worker_lost(struct kernel *k, const char *why)
{
    struct request *r = k->current;
    if (!r)
        return;
    k->current = NULL;
    const char *ename = r->interrupted_for_timeout ? "TimeoutError" : "WorkerDied";
    log_warn("%s %s: %s", msg_type(r->msg), msg_id(r->msg), why);
    if (strcmp(msg_type(r->msg), "execute_request") == 0 && !r->silent) {
        char line[1024];
        snprintf(line, sizeof line, "\033[0;31m%s\033[0m: %s", ename, why);
        json_t *c = json_pack("{s:s, s:s, s:[s]}", "ename", ename, "evalue", why,
                              "traceback", line);
        kernel_publish(k, r->msg->header, "error", &c);
    }
    if (has_reply(r))
        reply_error(k, r, ename, why);
    end(k, r);
    if (strcmp(msg_type(r->msg), "execute_request") == 0 && r->stop_on_error &&
        !r->silent)
        abort_queued(k, false);
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
    if (!within_cap(k, k->current, type, content))
        return;
    if (k->current && strcmp(type, "execute_result") == 0 && k->current->store_history) {
        const char *text = json_string_value(
            json_object_get(json_object_get(content, "data"), "text/plain"));
        if (text)
            history_set_output(&k->history, k->current->execution_count, text);
    }
    struct msg *m =
        msg_make(&k->session, type, NULL, &(json_t *){json_incref(content)}, false);
    if (!m)
        return;
    json_t *md = json_object_get(obj, "metadata");
    if (json_is_object(md)) {
        json_decref(m->metadata);
        m->metadata = json_incref(md);
    }
    json_t *parent = k->current ? k->current->msg->header : k->last_parent;
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

static void worker_input_request(struct kernel *k, json_t *obj)
{
    json_t *content = json_object_get(obj, "content");
    if (!k->current || !json_is_object(content)) {
        log_warn("the worker asked for input with no request running");
        return;
    }
    json_t *c = json_incref(content);
    struct msg *m = msg_make(&k->session, "input_request", k->current->msg, &c, true);
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
    if (!type) {
        log_warn("the worker sent a frame that is not a message: %s", jerr.text);
    } else if (strcmp(type, "iopub") == 0) {
        worker_iopub(k, obj, f);
    } else if (strcmp(type, "reply") == 0) {
        if (k->current && k->child.state == CHILD_BUSY)
            finish_request(k, json_object_get(obj, "content"),
                           json_object_get(obj, "metadata"));
        else
            log_warn("the worker sent a reply with no request running");
    } else if (strcmp(type, "hello") == 0) {
        worker_hello(k, obj);
    } else if (strcmp(type, "input_request") == 0) {
        worker_input_request(k, obj);
    } else {
        log_warn("the worker sent an unknown frame type %.40s", type);
    }
    json_decref(obj);
}

void dispatch_stdin(struct kernel *k, struct msg **m)
{
    const char *type = msg_type(*m);
    if (strcmp(type, "input_reply") != 0) {
        log_warn("unexpected %s on stdin", type);
        return;
    }
    if (!k->current) {
        log_warn("an input_reply came with no cell waiting for input");
        return;
    }
    json_t *w = json_pack("{s:s, s:O}", "type", "input_reply", "content", (*m)->content);
    if (w)
        kernel_send_worker(k, w, NULL);
    json_decref(w);
}
