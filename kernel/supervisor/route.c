/* route: what the worker sends, and the answers to what it asked.
 *
 * A frame passes its kind's parser (link/frames.c) before anything is done
 * with it. Each event names the request it belongs to (its msg_id), which
 * gives it its parent header, even for output from a thread that a cell
 * started and that outlived the cell; output that belongs to no running
 * request counts against the kernel's caps for late output (limits.c). A reply
 * must name the request it answers, and that must be the request running in
 * the shell it names: code in the worker, which can write to the link, cannot
 * answer a request twice, nor one that has not started, nor make a later
 * request take an earlier one's answer. A reply that lies is dropped, logged
 * and counted; a worker that keeps lying is restarted, and the request it runs
 * is told why. */
#include "kernel/supervisor/route.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernel/link/frames.h"
#include "kernel/util/log.h"
#include "kernel/supervisor/active.h"
#include "kernel/supervisor/handlers.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/shells.h"
#include "kernel/supervisor/worker_log.h"

/* Replies that name a request their shell is not running, from one worker: past
 * this, the worker is restarted. A worker whose code does not write to the link
 * sends none (a subshell deleted while its request ran may leave one). */
#define ROUTE_MAX_LIES 10
/* The longest prompt of an input request that reaches the client. */
#define ROUTE_MAX_PROMPT (16u << 10)

/* Frames dropped are logged within a limit: code in the worker can forge them
 * as fast as the link carries them. */
static struct log_limit bad_frames_logged = {
    .what = "lines about frames dropped from the worker",
    .lines_per_s = 1,
    .burst_lines = 20,
    .max_bytes = 1u << 20,
};

static void bad_frame(struct kernel *k, const char *what)
{
    k->bad_frames++;
    log_limited(&bad_frames_logged, LOG_WARN,
                "dropped a frame from the worker (%lu so far): %s", k->bad_frames, what);
}

/* A reply that claims a request its shell is not running: dropped, and held
 * against the worker. */
static void lie(struct kernel *k, const char *what)
{
    bad_frame(k, what);
    if (++k->lies <= ROUTE_MAX_LIES || k->io.worker(k->io.ctx) != KERNEL_WORKER_READY)
        return;
    char why[320];
    snprintf(why, sizeof why,
             "The worker sent %lu replies to requests it was not running (code in it "
             "wrote forged messages to its link to the kernel), so it was restarted: "
             "variables and imports from earlier cells are lost.",
             k->lies);
    log_warn("%s", why);
    k->lies = 0;
    k->io.restart_worker(k->io.ctx, why);
}

/* Nothing from the worker runs as a client's page (active.c) unless the user
 * said so: every output and reply is made inert here, before the caps count
 * it, so that they count what is published. */
static void make_inert(const struct kernel *k, const char *iopub_type, json_t *content)
{
    if (k->opts->active_output)
        return;
    struct active_policy p = {.remote = k->opts->network};
    int changed =
        iopub_type ? active_iopub(iopub_type, content, &p) : active_reply(content, &p);
    if (changed)
        log_info("made %d active output value%s inert", changed, changed == 1 ? "" : "s");
}

static void worker_iopub(struct kernel *k, struct link_iopub *f,
                         const struct link_frame *raw)
{
    /* Large strings that came as raw text go into the content first: the caps
     * and the history see them as any other. */
    size_t nbuffers = raw->nbuffers;
    char err[256];
    int rc = f->raw ? link_iopub_take_raw(f, raw->buffers, raw->nbuffers, &nbuffers, err,
                                          sizeof err)
                    : 0;
    if (rc) {
        bad_frame(k, rc == -ENOMEM ? "out of memory taking its raw text" : err);
        return;
    }
    /* Its parent: the request it names (running, or run lately), else the main
     * shell's running request. */
    struct request *r = f->parent ? shells_running(k, f->parent) : NULL;
    json_t *parent = r ? r->msg->header : shells_recent_header(k, f->parent);
    if (!parent && !f->parent && (r = shells_running(k, NULL)))
        parent = r->msg->header;
    make_inert(k, f->msg_type, f->content);
    size_t bytes = 0;
    for (size_t i = 0; i < nbuffers; i++)
        bytes += raw->buffers[i].len;
    json_t *metadata = f->metadata;
    if (!limits_output(k, r, parent, f->msg_type, f->content, &metadata, bytes))
        return;
    if (r && strcmp(f->msg_type, "execute_result") == 0 && r->store_history) {
        const char *text = json_string_value(
            json_object_get(json_object_get(f->content, "data"), "text/plain"));
        if (text)
            history_set_output(&k->history, r->execution_count, text);
    }
    json_t *c = json_incref(f->content);
    outbox_publish_full(k, parent, f->msg_type, &c, metadata, raw->buffers, nbuffers);
}

static void worker_hello(struct kernel *k, const struct link_hello *f)
{
    /* Only a starting worker says hello: once cells run, the link is in reach
     * of the user's code, which must not rewrite the sandbox's report. */
    if (!k->io.worker_hello(k->io.ctx)) {
        bad_frame(k, "a hello from a worker that is already running");
        return;
    }
    snprintf(k->python_version, sizeof k->python_version, "%s", f->python_version);
    json_decref(k->sandbox_report);
    k->sandbox_report = json_incref(f->sandbox);
    k->lies = 0;
    limits_worker_ready(k);
}

static void worker_reply(struct kernel *k, const struct link_reply *f)
{
    struct shell *sh = shells_find(k, f->shell);
    if (!sh || !sh->current) {
        lie(k, "a reply with no request running in its shell");
        return;
    }
    if (strcmp(f->parent, msg_id(sh->current->msg)) != 0) {
        lie(k, "a reply to a request that its shell is not running");
        return;
    }
    make_inert(k, NULL, f->content);
    const json_t *metadata = f->metadata;
    json_t *content = limits_reply(k, sh->current, f->content, &metadata);
    shells_finish(k, sh, content, metadata);
    json_decref(content);
}

static void worker_input_request(struct kernel *k, const struct link_input_request *f)
{
    struct request *r = shells_running(k, f->parent);
    if (!r) {
        bad_frame(k, "an input request with no request running");
        return;
    }
    /* The runtime asks only for a request whose client takes input, and once
     * until it is answered; the client gets a prompt and a flag, no more. */
    if (!json_is_true(json_object_get(r->msg->content, "allow_stdin"))) {
        bad_frame(k, "an input request for a request whose client takes no input");
        return;
    }
    if (r->input_id[0]) {
        bad_frame(k, "an input request while one is waiting for its answer");
        return;
    }
    const char *prompt = json_string_value(json_object_get(f->content, "prompt"));
    size_t len = prompt ? json_string_length(json_object_get(f->content, "prompt")) : 0;
    if (len > ROUTE_MAX_PROMPT) {
        len = ROUTE_MAX_PROMPT;
        while (len > 0 && ((unsigned char)prompt[len] & 0xC0) == 0x80)
            len--; /* do not split a UTF-8 sequence */
    }
    json_t *c = json_pack("{s:s%, s:b}", "prompt", prompt ? prompt : "", len, "password",
                          json_is_true(json_object_get(f->content, "password")));
    if (!c)
        return;
    if (outbox_input_request(k, r, &c, r->input_id, sizeof r->input_id) != 0)
        r->input_id[0] = 0;
}

void route_frame(struct kernel *k, const struct link_frame *raw)
{
    char err[256];
    enum link_kind kind;
    json_t *obj;
    if (link_decode(raw->json, raw->json_len, &kind, &obj, err, sizeof err) != 0) {
        bad_frame(k, err);
        return;
    }
    int rc = 0;
    switch (kind) {
    case LINK_IOPUB: {
        struct link_iopub f;
        if (!(rc = link_iopub_parse(obj, &f, err, sizeof err)))
            worker_iopub(k, &f, raw);
        break;
    }
    case LINK_REPLY: {
        struct link_reply f;
        if (!(rc = link_reply_parse(obj, &f, err, sizeof err)))
            worker_reply(k, &f);
        break;
    }
    case LINK_HELLO: {
        struct link_hello f;
        if (!(rc = link_hello_parse(obj, &f, err, sizeof err)))
            worker_hello(k, &f);
        break;
    }
    case LINK_INPUT_REQUEST: {
        struct link_input_request f;
        if (!(rc = link_input_request_parse(obj, &f, err, sizeof err)))
            worker_input_request(k, &f);
        break;
    }
    case LINK_HISTORY: {
        struct link_history f;
        if (!(rc = link_history_parse(obj, &f, err, sizeof err)))
            handlers_worker_history(k, &f);
        break;
    }
    case LINK_LOG: {
        struct link_log f;
        if (!(rc = link_log_parse(obj, &f, err, sizeof err)))
            worker_log_line(f.text, strlen(f.text));
        break;
    }
    case LINK_REQUEST:
    case LINK_INTERRUPT:
    case LINK_SUBSHELL:
    case LINK_INPUT_REPLY:
    case LINK_HISTORY_REPLY:
    case LINK_KINDS:
        rc = -EBADMSG;
        snprintf(err, sizeof err, "a %s frame, which only the supervisor sends",
                 link_kind_name(kind));
        break;
    }
    if (rc)
        bad_frame(k, err);
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
    json_t *w = link_input_reply_build(
        &(struct link_input_reply){.parent = msg_id(r->msg), .content = (*m)->content});
    r->input_id[0] = 0;
    if (w)
        k->io.to_worker(k->io.ctx, w, NULL);
    json_decref(w);
out:
    msg_free(*m);
    *m = NULL;
}
