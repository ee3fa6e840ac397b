/* route: what the worker sends, and the answers to what it asked.
 *
 * Each event names the request it belongs to (its msg_id), which gives it its
 * parent header, even for output from a thread that a cell started and that
 * outlived the cell. A reply is matched to the request running in the shell
 * it names; a reply for a shell that runs nothing is dropped, so that code in
 * the worker cannot answer a request twice. */
#include "kernel/supervisor/route.h"

#include <stdio.h>
#include <string.h>

#include "kernel/log.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/shells.h"

static void bad_frame(struct kernel *k, const char *what)
{
    k->bad_frames++;
    log_warn("dropped a frame from the worker (%lu so far): %s", k->bad_frames, what);
}

static const char *const iopub_types[] = {
    "stream",         "display_data", "update_display_data",
    "execute_result", "error",        "clear_output",
    "comm_open",      "comm_msg",     "comm_close",
};

static void worker_iopub(struct kernel *k, json_t *obj, const struct link_frame *f)
{
    const char *type = json_string_value(json_object_get(obj, "msg_type"));
    json_t *content = json_object_get(obj, "content");
    bool known = false;
    for (size_t i = 0; type && i < sizeof iopub_types / sizeof iopub_types[0]; i++)
        known |= strcmp(type, iopub_types[i]) == 0;
    if (!known || !json_is_object(content)) {
        char what[96];
        snprintf(what, sizeof what, "an iopub message that is not one: %.40s",
                 type ? type : "(no msg_type)");
        bad_frame(k, what);
        return;
    }
    /* Its parent: the request it names (running, or run lately), else the main
     * shell's running request. */
    const char *pid = json_string_value(json_object_get(obj, "parent"));
    struct request *r = pid ? shells_running(k, pid) : NULL;
    json_t *parent = r ? r->msg->header : shells_recent_header(k, pid);
    if (!parent && !pid && (r = shells_running(k, NULL)))
        parent = r->msg->header;
    if (!limits_output(k, r, type, content))
        return;
    if (r && strcmp(type, "execute_result") == 0 && r->store_history) {
        const char *text = json_string_value(
            json_object_get(json_object_get(content, "data"), "text/plain"));
        if (text)
            history_set_output(&k->history, r->execution_count, text);
    }
    json_t *c = json_incref(content);
    outbox_publish_full(k, parent, type, &c, json_object_get(obj, "metadata"), f->buffers,
                        f->nbuffers);
}

static void worker_hello(struct kernel *k, json_t *obj)
{
    /* Only a starting worker says hello: once cells run, the link is in reach
     * of the user's code, which must not rewrite the sandbox's report. */
    if (!k->io.worker_hello(k->io.ctx)) {
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
}

static void worker_reply(struct kernel *k, json_t *obj)
{
    const char *id = json_string_value(json_object_get(obj, "shell"));
    struct shell *sh = shells_find(k, id ? id : "");
    if (!sh || !sh->current) {
        bad_frame(k, "a reply with no request running in its shell");
        return;
    }
    shells_finish(k, sh, json_object_get(obj, "content"),
                  json_object_get(obj, "metadata"));
}

static void worker_input_request(struct kernel *k, json_t *obj)
{
    json_t *content = json_object_get(obj, "content");
    const char *pid = json_string_value(json_object_get(obj, "parent"));
    struct request *r = shells_running(k, pid);
    if (!r || !json_is_object(content)) {
        bad_frame(k, "an input request with no request running");
        return;
    }
    json_t *c = json_incref(content);
    if (outbox_input_request(k, r, &c, r->input_id, sizeof r->input_id) != 0)
        r->input_id[0] = 0;
}

void route_frame(struct kernel *k, const struct link_frame *f)
{
    json_error_t jerr;
    json_t *obj = json_loadb(f->json, f->json_len, 0, &jerr);
    const char *type = json_string_value(json_object_get(obj, "type"));
    if (!type)
        bad_frame(k, obj ? "a message without a type" : jerr.text);
    else if (strcmp(type, "iopub") == 0)
        worker_iopub(k, obj, f);
    else if (strcmp(type, "reply") == 0)
        worker_reply(k, obj);
    else if (strcmp(type, "hello") == 0)
        worker_hello(k, obj);
    else if (strcmp(type, "input_request") == 0)
        worker_input_request(k, obj);
    else
        bad_frame(k, "an unknown kind of frame");
    json_decref(obj);
}

/* The request an input_reply answers: the one whose input_request is its
 * parent, or, from a client that does not say, the only one waiting. */
static struct request *waiting_for(struct kernel *k, const char *parent)
{
    struct request *only = NULL;
    int waiting = 0;
    for (size_t i = 0; i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (!r || !r->input_id[0])
            continue;
        if (parent && strcmp(parent, r->input_id) == 0)
            return r;
        only = r;
        waiting++;
    }
    return waiting == 1 ? only : NULL;
}

void route_stdin(struct kernel *k, struct msg **m)
{
    const char *type = msg_type(*m);
    if (strcmp(type, "input_reply") != 0) {
        log_warn("unexpected %s on stdin", type);
        goto out;
    }
    const char *parent =
        json_string_value(json_object_get((*m)->parent_header, "msg_id"));
    struct request *r = waiting_for(k, parent);
    if (!r) {
        log_warn("an input_reply came with no cell waiting for input");
        goto out;
    }
    json_t *w = json_pack("{s:s, s:s, s:O}", "type", "input_reply", "parent",
                          msg_id(r->msg), "content", (*m)->content);
    r->input_id[0] = 0;
    if (w)
        k->io.to_worker(k->io.ctx, w, NULL);
    json_decref(w);
out:
    msg_free(*m);
    *m = NULL;
}
