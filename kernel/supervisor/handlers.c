/* handlers: kernel_info, history, shutdown, interrupt and subshells.
 *
 * kernel_info tells the truth about the sandbox: until the first worker has
 * said hello, its layers are named but none is claimed; afterwards the
 * worker's own report is given, as it was at start-up (a running worker
 * cannot rewrite it: see route.c). */
#include "kernel/supervisor/handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/link/link.h"
#include "kernel/util/log.h"
#include "kernel/version.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/shells.h"
#include "sandbox/sandbox.h"

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
    /* The limits that the supervisor enforces on its own, whatever the machine. */
    json_t *more = json_pack("{s:f, s:I, s:{s:f, s:f}, s:I}", "introspection_timeout",
                             k->opts->introspection_s, "max_image_output_bytes",
                             (json_int_t)options_max_images(k->opts), "background_cpu",
                             "burst_s", k->opts->timeout_s, "average_cpus",
                             k->opts->timeout_s > 0 ? LIMITS_BACKGROUND_RATE : 0.0,
                             "max_worker_message_bytes",
                             (json_int_t)link_worker_frame_limit(
                                 k->opts->max_output, options_max_images(k->opts)));
    if (s && more)
        json_object_update(s, more);
    json_decref(more);
    if (s)
        json_object_set_new(
            s, "counts",
            json_pack("{s:I, s:I, s:I, s:I}", "cells", (json_int_t)k->counts.cells,
                      "timeouts", (json_int_t)k->counts.timeouts, "out_of_memory",
                      (json_int_t)k->counts.out_of_memory, "worker_restarts",
                      (json_int_t)k->counts.worker_restarts));
    if (s)
        json_object_set_new(s, "layers",
                            k->sandbox_report ? json_incref(k->sandbox_report)
                                              : pending_layers(k));
    return s;
}

/* What the main shell is doing: {"execution_count", "seconds", "queued"} of
 * the cell that runs, or null when none does (asked on control, this is how a
 * client tells a busy kernel from one that does not answer). */
static json_t *running_cell(struct kernel *k)
{
    const struct shell *sh = &k->shells[0];
    const struct request *r = sh->current;
    if (!r || !r->execute)
        return json_null();
    json_int_t queued = 0;
    for (const struct request *q = sh->queue_head; q; q = q->next)
        queued++;
    double s = r->sent_at > 0 ? loop_now(k->loop) - r->sent_at : 0;
    json_t *j = json_pack("{s:i, s:f, s:I}", "execution_count", r->execution_count,
                          "seconds", s > 0 ? s : 0.0, "queued", queued);
    return j ? j : json_null();
}

void handlers_kernel_info(struct kernel *k, struct request *req)
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
        "help_links", "text", "Python Reference", "url",
        "https://docs.python.org/" SANDPIT_PY_SHORT "/", "debugger", 0,
        "supported_features", "kernel subshells");
    json_t *sp = c ? sandbox_summary(k) : NULL;
    if (sp)
        json_object_set_new(sp, "running", running_cell(k));
    if (c)
        json_object_set_new(c, "sandpit", sp);
    outbox_reply(k, req, "kernel_info_reply", &c, NULL);
}

void handlers_connect(struct kernel *k, struct request *req)
{
    json_t *c = json_pack("{s:s}", "status", "ok");
    for (int ch = 0; c && ch < CONNECTION_NCHANNELS; ch++) {
        char key[32];
        snprintf(key, sizeof key, "%s_port", connection_channel_name(ch));
        json_object_set_new(c, key, json_integer(k->ports[ch]));
    }
    outbox_reply(k, req, "connect_reply", &c, NULL);
}

/* The loop's watch of the history's answers, from its first query on. */
static void on_history_answers(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    (void)events;
    struct kernel *k = data;
    history_collect(&k->history);
}

/* Asks q of the history's thread; done gets the answer. 0, or -errno with
 * why in err. */
static int ask_history(struct kernel *k, const struct history_query *q,
                       size_t max_entries, size_t max_bytes, history_done_fn *done,
                       void *arg, char *err, size_t errlen)
{
    int rc =
        history_submit(&k->history, q, max_entries, max_bytes, done, k, arg, err, errlen);
    if (rc == 0 && k->history_event <= 0) {
        k->history_event =
            loop_add_fd(k->loop, history_event_fd(&k->history), LOOP_READABLE,
                        LOOP_RANK_CHANNELS, on_history_answers, k);
        if (k->history_event <= 0)
            log_error("history: cannot watch the answers of its queries");
    }
    return rc;
}

/* A client's history_request, answered by the history's thread. */
static void history_answered(void *ctx, void *arg, json_t *list, const char *err)
{
    struct kernel *k = ctx;
    struct request *req = arg;
    if (!list && !err) { /* the kernel ends */
        request_free(req);
        return;
    }
    if (list) {
        json_t *c = json_pack("{s:s, s:o}", "status", "ok", "history", list);
        outbox_reply(k, req, "history_reply", &c, NULL);
    } else {
        outbox_error(k, req, "ValueError", err);
    }
    shells_answered(k, req);
}

void handlers_history(struct kernel *k, struct request *req)
{
    char err[256];
    struct history_query q;
    if (history_query_parse(req->msg->content, &q, err, sizeof err) == 0 &&
        ask_history(k, &q, 0, 0, history_answered, req, err, sizeof err) == 0)
        req->deferred = true;
    else
        outbox_error(k, req, "ValueError", err);
}

/* Whether the worker has not yet taken the answer to its last history query:
 * its runtime asks one at a time and waits for each answer, so a second query
 * meanwhile comes from code that writes to the link, and asking without reading
 * would queue answers of up to HANDLERS_WORKER_HISTORY_BYTES each. */
static bool history_answer_pending(struct kernel *k)
{
    if (k->history_asking && k->history_asked_gen == k->worker_generation)
        return true;
    return k->io.worker_written && k->io.worker_written(k->io.ctx) < k->history_mark;
}

/* A worker's query on the history's thread: the worker that asked it. */
struct worker_query {
    long long id;
    unsigned long generation;
};

static void answer_worker(struct kernel *k, long long id, json_t *list, const char *err)
{
    json_t *w = link_history_reply_build(
        &(struct link_history_reply){.id = id,
                                     .history = list,
                                     .error = list ? NULL : err,
                                     .session = k->history.session});
    if (w && k->io.to_worker(k->io.ctx, w, NULL) == 0 && list && k->io.worker_queued)
        k->history_mark = k->io.worker_queued(k->io.ctx);
    json_decref(w);
}

/* The answer to a worker's query: dropped if that worker has gone since. */
static void worker_history_answered(void *ctx, void *arg, json_t *list, const char *err)
{
    struct kernel *k = ctx;
    struct worker_query *wq = arg;
    if (wq->generation == k->history_asked_gen)
        k->history_asking = false;
    if ((list || err) && wq->generation != k->worker_generation)
        log_debug("history: the answer for a worker that has gone is dropped");
    else if (list || err) {
        if (!list)
            log_info("the worker's history query was refused: %s", err);
        answer_worker(k, wq->id, list, err);
    }
    json_decref(list);
    free(wq);
}

void handlers_worker_history(struct kernel *k, const struct link_history *f)
{
    char err[256] = "";
    struct history_query q;
    struct worker_query *wq = NULL;
    if (history_answer_pending(k)) {
        snprintf(err, sizeof err,
                 "the kernel is still sending the answer to an earlier history query; "
                 "one is answered at a time");
        unsigned long n = ++k->history_refused;
        if ((n & (n - 1)) == 0) /* the 1st, 2nd, 4th...: a flood is not logged in full */
            log_warn("the worker asked for the history before it took the last answer "
                     "(%lu times)",
                     n);
    } else if (history_query_parse(f->query, &q, err, sizeof err) == 0 &&
               (wq = malloc(sizeof *wq))) {
        *wq = (struct worker_query){.id = f->id, .generation = k->worker_generation};
        if (ask_history(k, &q, HANDLERS_WORKER_HISTORY_ENTRIES,
                        HANDLERS_WORKER_HISTORY_BYTES, worker_history_answered, wq, err,
                        sizeof err) == 0) {
            k->history_asking = true;
            k->history_asked_gen = wq->generation;
            return;
        }
        free(wq);
        log_info("the worker's history query was refused: %s", err);
    } else {
        if (err[0] == 0)
            snprintf(err, sizeof err, "out of memory");
        log_info("the worker's history query was refused: %s", err);
    }
    answer_worker(k, f->id, NULL, err);
}

void handlers_shutdown(struct kernel *k, struct request *req)
{
    bool restart = json_is_true(json_object_get(req->msg->content, "restart"));
    bool in_place =
        restart && json_is_true(json_object_get(
                       json_object_get(req->msg->metadata, "sandpit"), "in_place"));
    json_t *c = json_pack("{s:s, s:b}", "status", "ok", "restart", restart);
    outbox_reply(k, req, "shutdown_reply", &c, NULL);
    if (!in_place) {
        /* As the spec says, and as ipykernel does, whatever restart says: the
         * client starts a new kernel, and waits for this one to end first. */
        log_info(restart ? "restart requested: exiting, for the client to start a new "
                           "kernel"
                         : "shutdown requested");
        loop_stop(k->loop);
        return;
    }
    log_info("restart in place requested");
    shells_abort_all(k);
    history_new_session(&k->history);
    k->execution_count = 0;
    k->io.restart_worker(k->io.ctx,
                         "The kernel was restarted while this cell was running.");
}

void handlers_interrupt(struct kernel *k, struct request *req)
{
    limits_interrupt_all(k, "interrupt requested");
    json_t *c = json_pack("{s:s}", "status", "ok");
    outbox_reply(k, req, "interrupt_reply", &c, NULL);
}

void handlers_create_subshell(struct kernel *k, struct request *req)
{
    struct shell *sh = shells_create(k);
    if (!sh) {
        char why[96];
        snprintf(why, sizeof why, "at most %d subshells can exist at once",
                 KERNEL_MAX_SHELLS - 1);
        outbox_error(k, req, "RuntimeError", why);
        return;
    }
    json_t *c = json_pack("{s:s, s:s}", "status", "ok", "subshell_id", sh->id);
    outbox_reply(k, req, "create_subshell_reply", &c, NULL);
}

void handlers_delete_subshell(struct kernel *k, struct request *req)
{
    const char *id = json_string_value(json_object_get(req->msg->content, "subshell_id"));
    struct shell *sh = id && *id ? shells_find(k, id) : NULL;
    if (!sh) {
        outbox_error(k, req, "KeyError", "no subshell with that subshell_id");
        return;
    }
    log_info("deleting subshell %s", id);
    shells_delete(k, sh, "The subshell running this request was deleted.");
    json_t *c = json_pack("{s:s}", "status", "ok");
    outbox_reply(k, req, "delete_subshell_reply", &c, NULL);
}

void handlers_list_subshell(struct kernel *k, struct request *req)
{
    json_t *ids = json_array();
    for (size_t i = 1; i < k->nshells; i++)
        json_array_append_new(ids, json_string(k->shells[i].id));
    json_t *c = json_pack("{s:s, s:o}", "status", "ok", "subshell_id", ids);
    outbox_reply(k, req, "list_subshell_reply", &c, NULL);
}
