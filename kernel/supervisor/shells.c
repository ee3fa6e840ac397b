/* shells: queues of requests for the worker, one per shell.
 *
 * Requests for the worker wait in the queue of their shell: the main shell,
 * or a subshell named by the header's subshell_id (JEP 91). Each shell has at
 * most one request in the worker at a time; subshells run theirs in threads
 * of their own, so a long cell does not hold up a quick one elsewhere.
 * Control requests for the worker jump the queue of their shell, in the order
 * they came.
 *
 * Every request has a begin and an end, here alone: begin publishes its
 * status busy and end its idle, once each (asserted, and counted in the
 * kernel), whichever way it goes: answered by the supervisor, by the worker,
 * refused, aborted, lost with the worker or with its subshell. A request that
 * fails under stop_on_error takes the execute requests waiting behind it in
 * its shell with it (answered "aborted", as ipykernel does), in its end. */
#include "kernel/supervisor/shells.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/link/frames.h"
#include "kernel/mem/loadpages.h"
#include "kernel/util/log.h"
#include "kernel/supervisor/limits.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"

void shells_init(struct kernel *k)
{
    memset(k->shells, 0, sizeof k->shells);
    k->nshells = 1; /* the main shell, id "" */
}

/* Appends r to sh's queue; a control request goes after the control requests
 * already waiting (they are all at its head) and before every other, so that
 * control requests jump the shell's but keep their own order. */
static void enqueue(struct shell *sh, struct request *r)
{
    struct request **p = &sh->queue_head;
    if (r->channel == CONNECTION_CONTROL)
        while (*p && (*p)->channel == CONNECTION_CONTROL)
            p = &(*p)->next;
    else if (sh->queue_tail)
        p = &sh->queue_tail->next;
    r->next = *p;
    *p = r;
    if (!r->next)
        sh->queue_tail = r;
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

void shells_release(struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++) {
        struct shell *sh = &k->shells[i];
        struct request *r;
        while ((r = dequeue(sh)))
            request_free(r);
        request_free(sh->current);
        sh->current = NULL;
        sh->answering = NULL; /* its handler's */
    }
    for (size_t i = 0; i < KERNEL_RECENT_PARENTS; i++) {
        json_decref(k->recent[i]);
        k->recent[i] = NULL;
    }
}

struct shell *shells_find(struct kernel *k, const char *id)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (strcmp(k->shells[i].id, id) == 0)
            return &k->shells[i];
    return NULL;
}

struct request *shells_running(struct kernel *k, const char *id)
{
    if (!id)
        return k->shells[0].current;
    for (size_t i = 0; i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (r && strcmp(msg_id(r->msg), id) == 0)
            return r;
    }
    return NULL;
}

static void remember_parent(struct kernel *k, const struct request *r)
{
    json_decref(k->recent[k->recent_next]);
    k->recent[k->recent_next] = json_incref(r->msg->header);
    k->recent_next = (k->recent_next + 1) % KERNEL_RECENT_PARENTS;
}

json_t *shells_recent_header(struct kernel *k, const char *id)
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

/* --- a request's begin and end --------------------------------------------------- */

static void abort_queued(struct kernel *k, struct shell *sh, bool everything);

/* The request begins: status busy, parented to it. Once a request. */
static void begin(struct kernel *k, struct request *r)
{
    assert(!r->begun && "a request is begun once");
    r->begun = true;
    k->requests_begun++;
    outbox_busy(k, r);
}

/* The request ends: status idle, parented to it, and *rp is freed (NULL
 * afterwards). failed_in: the shell it failed in, whose waiting execute
 * requests go with it if it is a cell under stop_on_error (and not silent);
 * NULL when it did not fail, or takes none with it. Once a request, after its
 * begin. */
static void end(struct kernel *k, struct request **rp, struct shell *failed_in)
{
    struct request *r = *rp;
    *rp = NULL;
    assert(r && r->begun && !r->ended && "a request is ended once, after its begin");
    r->ended = true;
    k->requests_ended++;
    outbox_idle(k, r);
    bool stop = failed_in && r->execute && r->stop_on_error && !r->silent;
    request_free(r);
    if (stop)
        abort_queued(k, failed_in, false);
}

/* The request is answered at once with an error (if reply), between its begin
 * and its end; failed_in as for end. */
static void refuse(struct kernel *k, struct request **rp, bool reply, const char *ename,
                   const char *why, struct shell *failed_in)
{
    begin(k, *rp);
    if (reply)
        outbox_error(k, *rp, ename, why);
    end(k, rp, failed_in);
}

void shells_refuse(struct kernel *k, struct request **req, const char *ename,
                   const char *why)
{
    refuse(k, req, true, ename, why, NULL);
}

/* --- ending requests ---------------------------------------------------------- */

static void send_aborted(struct kernel *k, struct request **rp)
{
    char type[96];
    struct request *r = *rp;
    begin(k, r);
    if (request_has_reply(r)) {
        json_t *c = json_pack("{s:s}", "status", "aborted");
        outbox_reply(k, r, request_reply_type(r, type, sizeof type), &c,
                     outbox_reply_metadata(k, "aborted"));
    }
    end(k, rp, NULL);
}

/* After an error with stop_on_error, the execute requests already waiting in
 * that shell are answered "aborted" without running; other requests
 * (completion, inspection) still run. With everything, all requests waiting
 * in the shell go (restart, deletion of a subshell). */
static void abort_queued(struct kernel *k, struct shell *sh, bool everything)
{
    struct request **p = &sh->queue_head, *last = NULL;
    while (*p) {
        struct request *r = *p;
        if (everything || r->execute) {
            *p = r->next;
            log_info("aborting %s %s", msg_type(r->msg), msg_id(r->msg));
            send_aborted(k, &r);
        } else {
            last = r;
            p = &r->next;
        }
    }
    sh->queue_tail = last;
}

void shells_abort_all(struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++)
        abort_queued(k, &k->shells[i], true);
}

/* Takes the running request out of sh: its timers stop and nothing routes to
 * it any more. The caller answers and ends it. */
static struct request *take_current(struct kernel *k, struct shell *sh)
{
    struct request *r = sh->current;
    sh->current = NULL;
    if (r)
        limits_stop(k, r);
    return r;
}

void shells_finish(struct kernel *k, struct shell *sh, const json_t *content,
                   const json_t *metadata)
{
    struct request *r = take_current(k, sh);
    if (!r)
        return;
    char type[96];
    /* The worker drops stream output past the cap before it reaches the link;
     * it reports how much, and the supervisor says it once, with its own count. */
    json_t *wd = json_object_get(content, "sandpit_dropped");
    limits_report_dropped(k, r,
                          json_is_integer(wd) && json_integer_value(wd) > 0
                              ? (unsigned long)json_integer_value(wd)
                              : 0);
    json_t *c = json_is_object(content) ? json_deep_copy(content) : json_object();
    json_object_del(c, "sandpit_dropped");
    const char *status = json_string_value(json_object_get(c, "status"));
    if (!status) {
        json_object_set_new(c, "status", json_string("error"));
        status = "error";
    }
    if (r->execute)
        json_object_set_new(c, "execution_count", json_integer(r->reply_count));
    json_t *md = outbox_reply_metadata(k, status);
    if (md && json_is_object(metadata))
        json_object_update(md, (json_t *)metadata);
    bool failed = strcmp(status, "error") == 0, execute = r->execute;
    if (request_has_reply(r)) {
        outbox_reply(k, r, request_reply_type(r, type, sizeof type), &c, md);
    } else {
        json_decref(c);
        json_decref(md);
    }
    end(k, &r, failed ? sh : NULL);
    if (execute && !k->loader_pages_released) {
        /* The supervisor has now done all it does for a cell, and bound the
         * calls it makes for one: what its libraries' loading read goes back. */
        k->loader_pages_released = true;
        log_debug("the loader's pages given back: %zu kB", loadpages_release() >> 10);
    }
}

/* A running request whose worker went away: an error on iopub (for a cell the
 * user sees) and in its reply. */
static void lose_request(struct kernel *k, struct shell *sh, const char *why)
{
    struct request *r = take_current(k, sh);
    if (!r)
        return;
    const char *ename = r->interrupted_for_timeout ? "TimeoutError" : "WorkerDied";
    log_warn("%s %s: %s", msg_type(r->msg), msg_id(r->msg), why);
    if (r->execute && !r->silent) {
        char line[1024];
        snprintf(line, sizeof line, "\033[0;31m%s\033[0m: %s", ename, why);
        json_t *c = json_pack("{s:s, s:s, s:[s]}", "ename", ename, "evalue", why,
                              "traceback", line);
        outbox_publish(k, r->msg->header, "error", &c);
    }
    if (request_has_reply(r))
        outbox_error(k, r, ename, why);
    end(k, &r, sh);
}

static void remove_shell(struct kernel *k, struct shell *sh, const char *why,
                         bool tell_worker)
{
    abort_queued(k, sh, true);
    struct request *r = take_current(k, sh);
    if (r) {
        /* Its thread is told to stop; the running request gets its answer now. */
        outbox_error(k, r, "SubshellDeleted", why);
        end(k, &r, NULL);
    }
    if (tell_worker) {
        json_t *w = link_subshell_build(
            &(struct link_subshell){.op = LINK_SUBSHELL_DELETE, .id = sh->id});
        if (w)
            k->io.to_worker(k->io.ctx, w, NULL);
        json_decref(w);
    }
    size_t i = (size_t)(sh - k->shells);
    memmove(&k->shells[i], &k->shells[i + 1], (k->nshells - i - 1) * sizeof *sh);
    k->nshells--;
}

void shells_delete(struct kernel *k, struct shell *sh, const char *why)
{
    remove_shell(k, sh, why, true);
}

void shells_worker_lost(struct kernel *k, const char *why)
{
    k->worker_generation++;
    /* Each running request, in any shell, gets its own answer... */
    for (size_t i = 0; i < k->nshells; i++)
        lose_request(k, &k->shells[i], why);
    /* ...and the subshells go: they lived in the worker's threads. */
    while (k->nshells > 1)
        remove_shell(k, &k->shells[k->nshells - 1],
                     "The worker process was restarted, and the subshell with it.",
                     false);
}

struct shell *shells_create(struct kernel *k)
{
    if (k->nshells == KERNEL_MAX_SHELLS)
        return NULL;
    struct msg_session ids;
    msg_session_init(&ids, NULL); /* a fresh UUID */
    struct shell *sh = &k->shells[k->nshells++];
    memset(sh, 0, sizeof *sh);
    snprintf(sh->id, sizeof sh->id, "%s", ids.session);
    json_t *w = link_subshell_build(
        &(struct link_subshell){.op = LINK_SUBSHELL_CREATE, .id = sh->id});
    if (w)
        k->io.to_worker(k->io.ctx, w, NULL);
    json_decref(w);
    log_info("created subshell %s", sh->id);
    return sh;
}

/* --- starting requests ---------------------------------------------------------- */

/* Reads execute_request's flags; false (with an error reply sent, and *rp
 * ended) when the content is not an execute request a kernel can run. Called
 * when its turn comes, so that the error reply comes in order too. */
static bool prepare_execute(struct kernel *k, struct shell *sh, struct request **rp)
{
    struct request *r = *rp;
    json_t *c = r->msg->content, *v;
    r->reply_count = k->execution_count;
    r->silent = json_is_true(json_object_get(c, "silent"));
    v = json_object_get(c, "store_history");
    r->store_history = !r->silent && (v ? json_is_true(v) : true);
    v = json_object_get(c, "stop_on_error");
    r->stop_on_error = v ? json_is_true(v) : true;
    const char *why = NULL;
    json_t *sp = json_object_get(r->msg->metadata, "sandpit");
    json_t *t = json_object_get(sp, "timeout");
    if (!json_is_string(json_object_get(c, "code")))
        why = "execute_request has no \"code\" string";
    else if (sp && !json_is_null(sp) && !json_is_object(sp))
        why = "the metadata's \"sandpit\" must be an object, such as {\"timeout\": 5}";
    else if (t && !json_is_null(t) && (!json_is_number(t) || json_number_value(t) < 0))
        why = "the metadata's sandpit.timeout must be a number of seconds, at least 0 "
              "(0: the kernel's own limit); the cell was not run";
    if (!why)
        return true;
    refuse(k, rp, true, "ValueError", why, sh);
    return false;
}

void shells_submit(struct kernel *k, struct request **req)
{
    struct request *r = *req;
    *req = NULL;
    const char *sub = json_string_value(json_object_get(r->msg->header, "subshell_id"));
    struct shell *sh = shells_find(k, sub ? sub : "");
    if (!sh) {
        refuse(k, &r, request_has_reply(r), "KeyError",
               "no subshell with the subshell_id in this request's header", NULL);
        return;
    }
    enqueue(sh, r);
    shells_pump(k);
}

/* Answers r with its handler; a request it keeps holds up the queue of the
 * shell whose id is shell (NULL: none) until shells_answered. */
static void answer(struct kernel *k, const char *shell, struct request *r)
{
    begin(k, r);
    r->answer(k, r);
    if (r->deferred) {
        struct shell *sh = shell ? shells_find(k, shell) : NULL;
        if (sh)
            sh->answering = r;
        return;
    }
    end(k, &r, NULL);
}

void shells_answer(struct kernel *k, struct request **req)
{
    struct request *r = *req;
    *req = NULL;
    answer(k, NULL, r);
}

void shells_answered(struct kernel *k, struct request *req)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (k->shells[i].answering == req)
            k->shells[i].answering = NULL;
    end(k, &req, NULL);
    shells_pump(k);
}

/* The request goes to the worker first, and its busy, execute_input and any
 * notice after: the worker starts on the cell while they are made and sent,
 * and what it sends back is read only after them, so clients see the same
 * order. */
static void start_request(struct kernel *k, struct shell *sh, struct request *r)
{
    const char *code = json_string_value(json_object_get(r->msg->content, "code"));
    if (r->execute) {
        if (!r->silent)
            k->counts.cells++;
        if (r->store_history)
            k->execution_count++;
        r->execution_count = k->execution_count + (r->store_history ? 0 : 1);
        r->reply_count = k->execution_count;
    }
    json_t *w = link_request_build(&(struct link_request){
        .shell = sh->id,
        .msg_type = msg_type(r->msg),
        .header = r->msg->header,
        .content = r->msg->content,
        .metadata = r->msg->metadata,
        .execution_count = r->execution_count,
        .silent = r->silent,
        .store_history = r->store_history,
        .timeout = r->timeout_s,
        .max_output = k->opts->max_output,
    });
    sh->current = r;
    remember_parent(k, r);
    if (!w || k->io.to_worker(k->io.ctx, w, r->msg) != 0)
        log_warn("the request %s did not reach the worker", msg_id(r->msg));
    json_decref(w);
    begin(k, r);
    if (r->execute && !r->silent) {
        json_t *c =
            json_pack("{s:s, s:i}", "code", code, "execution_count", r->execution_count);
        outbox_publish(k, r->msg->header, "execute_input", &c);
    }
    limits_start(k, r); /* its notice comes after execute_input */
    /* Written while the worker runs the cell, not before it has it. */
    if (r->execute && r->store_history)
        history_add(&k->history, k->execution_count, code);
}

/* A cell whose client asked for it (sandpit.abandon_if_gone in its metadata:
 * `sandpit run`, which a harness may kill while the cell waits) and has gone
 * away since: nobody waits for what it does. */
static bool abandoned(struct kernel *k, const struct request *r)
{
    json_t *sp = json_object_get(r->msg->metadata, "sandpit");
    return r->execute && json_is_true(json_object_get(sp, "abandon_if_gone")) &&
           k->io.client_present && !k->io.client_present(k->io.ctx, r->channel, r->msg);
}

void shells_pump(struct kernel *k)
{
again:
    for (size_t i = 0; i < k->nshells && !loop_stopped(k->loop); i++) {
        struct shell *sh = &k->shells[i];
        while (!sh->current && !sh->answering && sh->queue_head) {
            struct request *r = sh->queue_head;
            enum kernel_worker w = k->io.worker(k->io.ctx);
            if (r->answer) {
                /* Its handler may change the shells (delete a subshell, restart
                 * the worker): look at them afresh afterwards. */
                char id[KERNEL_SHELL_ID_MAX];
                snprintf(id, sizeof id, "%s", sh->id);
                answer(k, id, dequeue(sh));
                goto again;
            } else if (w == KERNEL_WORKER_READY) {
                r = dequeue(sh);
                if (abandoned(k, r)) {
                    log_info("not running %s: its client has gone", msg_id(r->msg));
                    send_aborted(k, &r);
                } else if (!r->execute || prepare_execute(k, sh, &r)) {
                    /* Every request the worker runs has a limit. */
                    limits_set_timeout(k, r);
                    start_request(k, sh, r);
                }
            } else if (w == KERNEL_WORKER_FAILING) {
                /* Workers keep failing to start: answer rather than leave clients
                 * waiting. */
                r = dequeue(sh);
                refuse(k, &r, request_has_reply(r), "WorkerUnavailable",
                       "The Python worker cannot start; the kernel log says why. "
                       "sandpit keeps trying to start it.",
                       NULL);
            } else {
                break;
            }
        }
    }
}
