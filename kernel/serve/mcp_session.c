/* mcp_session: sessions, their requests in flight and their answers
 * (mcp_session.h).
 *
 * The hard part is that three things end independently: a POST's client
 * (its stream goes), the session (DELETE, the cull, the child's death) and
 * the child's answer. Each request in flight (a pending) links its session
 * and its exchange; whichever ends first unlinks it, so that an answer for
 * a request nobody waits for any more finds no pending and is dropped, and
 * an exchange whose requests are all answered ends its stream. An exchange
 * is not freed while its stream may still call back: only once it has
 * ended it, or once its client has gone. */
#include "kernel/serve/mcp_session.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/client/jsonrpc.h"
#include "kernel/serve/stream.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "protocol/errbuf.h"

#define CANCELLED_CODE -32800 /* as the TypeScript SDK's RequestCancelled */

struct mcp_pending {
    json_int_t iid;    /* the id the child knows it by */
    json_t *client_id; /* the client's (new reference) */
    json_t *token;     /* the client's progress token, or NULL */
    struct mcp_exchange *ex;
    struct mcp_pending *next;
};

struct mcp_session {
    char id[MCP_SESSION_ID_LEN + 1];
    struct mcp_sessions *ss;
    struct mcp_child *child;
    struct mcp_pending *pending;
    int npending;
    json_int_t next_iid;
    double last_active; /* monotonic */
    struct mcp_session *next;
};

struct mcp_exchange {
    struct mcp_sessions *ss;
    struct mcp_session *sess; /* NULL once it has ended */
    struct http_stream *st;   /* NULL until opened, and once ended or gone */
    bool sse, batch, opened, done, ended;
    int outstanding;
    json_t *early; /* SSE: messages before the stream opened */
    json_t *body;  /* JSON: the responses, an array */
    struct mcp_exchange *next;
};

/* --- exchanges ----------------------------------------------------------- */

static void exchange_unlink(struct mcp_exchange *ex)
{
    struct mcp_exchange **pp = &ex->ss->exchanges;
    while (*pp && *pp != ex)
        pp = &(*pp)->next;
    if (*pp)
        *pp = ex->next;
}

static void pending_free(struct mcp_pending *p)
{
    json_decref(p->client_id);
    json_decref(p->token);
    free(p);
}

/* Forgets every pending of ex in its session (their answers will be dropped). */
static void exchange_drop_pendings(struct mcp_exchange *ex)
{
    if (!ex->sess)
        return;
    struct mcp_pending **pp = &ex->sess->pending;
    while (*pp) {
        struct mcp_pending *p = *pp;
        if (p->ex == ex) {
            *pp = p->next;
            ex->sess->npending--;
            pending_free(p);
        } else {
            pp = &p->next;
        }
    }
}

static void exchange_free(struct mcp_exchange *ex)
{
    exchange_drop_pendings(ex);
    exchange_unlink(ex);
    json_decref(ex->early);
    json_decref(ex->body);
    free(ex);
}

/* msg as text; or, when it would not fit a stream's bound (a result with
 * many large images), an error for the same request that says so, rather
 * than a client cut off mid-answer. New string; NULL when out of memory. */
static char *dump_bounded(const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    if (!text || n + 64 <= STREAM_MAX_QUEUED)
        return text;
    free(text);
    char why[256];
    snprintf(why, sizeof why,
             "the answer (%zu bytes) is larger than the server's bound for one answer "
             "(%u bytes): ask for less (fewer or smaller images, a shorter range)",
             n, STREAM_MAX_QUEUED);
    json_t *e = json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                          json_object_get(msg, "id"), "error", "code",
                          JSONRPC_INTERNAL_ERROR, "message", why);
    text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    return text;
}

/* Writes one SSE event; false when the client cannot take it (it is gone,
 * or reads too slowly for the stream's bound). */
static bool write_event(struct mcp_exchange *ex, const json_t *msg)
{
    char *text = dump_bounded(msg);
    if (!text)
        return false;
    size_t n = strlen(text);
    bool ok = http_stream_write(ex->st, "event: message\ndata: ", 21) == 0 &&
              http_stream_write(ex->st, text, n) == 0 &&
              http_stream_write(ex->st, "\n\n", 2) == 0;
    free(text);
    return ok;
}

/* The exchange's end, once it is open and has nothing more to wait for: a
 * JSON body's one write, and the stream's end. ex is freed. */
static void exchange_finish(struct mcp_exchange *ex)
{
    if (!ex->sse && ex->st) {
        const json_t *one = json_array_get(ex->body, 0);
        json_t *fallback = NULL;
        if (!one) /* every request cancelled: the first says so */
            one = fallback =
                json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error",
                          "code", CANCELLED_CODE, "message", "the request was cancelled");
        char *text = dump_bounded(ex->batch ? ex->body : one);
        if (text)
            http_stream_write(ex->st, text, strlen(text));
        free(text);
        json_decref(fallback);
    }
    if (ex->st)
        http_stream_end(ex->st);
    ex->st = NULL;
    exchange_free(ex);
}

/* One message for the client (borrowed): on the stream, or kept. */
static void exchange_emit(struct mcp_exchange *ex, json_t *msg)
{
    if (!ex->sse) {
        if (json_object_get(msg, "method"))
            return; /* a notification: a JSON body has no room for it */
        json_array_append(ex->body, msg);
    } else if (!ex->opened) {
        json_array_append(ex->early, msg);
    } else if (ex->st && !write_event(ex, msg)) {
        log_warn("mcp session %.8s...: a client reads its stream too slowly: ended",
                 ex->sess ? ex->sess->id : "(ended)");
        http_stream_end(ex->st);
        ex->st = NULL;
        ex->ended = true;
    }
}

/* A request of ex has been answered (or will not be): ex ends after the last. */
static void exchange_settle(struct mcp_exchange *ex)
{
    if (--ex->outstanding > 0)
        return;
    ex->done = true;
    if (ex->opened)
        exchange_finish(ex);
}

static void on_stream_gone(void *arg)
{
    struct mcp_exchange *ex = arg;
    ex->st = NULL;
    exchange_free(ex);
}

void mcp_exchange_open(void *arg, struct http_stream *st)
{
    struct mcp_exchange *ex = arg;
    ex->opened = true;
    ex->st = st;
    http_stream_on_gone(st, on_stream_gone, ex);
    size_t i;
    json_t *msg;
    json_array_foreach(ex->early, i, msg) {
        exchange_emit(ex, msg);
    }
    json_array_clear(ex->early);
    if (ex->done || ex->ended)
        exchange_finish(ex);
}

struct mcp_exchange *mcp_exchange_new(struct mcp_session *s, bool sse, bool batch)
{
    struct mcp_exchange *ex = calloc(1, sizeof *ex);
    if (!ex || !(ex->early = json_array()) || !(ex->body = json_array())) {
        if (ex) {
            json_decref(ex->early);
            free(ex);
        }
        return NULL;
    }
    ex->ss = s->ss;
    ex->sess = s;
    ex->sse = sse;
    ex->batch = batch;
    ex->next = s->ss->exchanges;
    s->ss->exchanges = ex;
    return ex;
}

static void answer_error(struct mcp_exchange *ex, json_t *id, int code, const char *text)
{
    json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                          "code", code, "message", text);
    if (e)
        exchange_emit(ex, e);
    json_decref(e);
}

/* The request's progress token under the child's id: its original kept. */
static void swap_token(json_t *msg, struct mcp_pending *p)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_t *token = json_object_get(meta, "progressToken");
    if (!token)
        return;
    p->token = json_incref(token);
    json_object_set_new(meta, "progressToken", json_integer(p->iid));
}

void mcp_exchange_request(struct mcp_exchange *ex, json_t *msg)
{
    struct mcp_session *s = ex->sess;
    json_t *id = json_object_get(msg, "id");
    ex->outstanding++;
    struct mcp_pending *p = NULL;
    const char *why = NULL;
    if (!s)
        why = "the MCP session has ended";
    else if (s->npending >= MCP_PENDING_MAX)
        why = "too many requests in flight in this session";
    else if (!(p = calloc(1, sizeof *p)))
        why = "out of memory";
    if (!why) {
        s->last_active = monotime_now();
        p->iid = ++s->next_iid;
        p->client_id = json_incref(id);
        p->ex = ex;
        swap_token(msg, p);
        json_t *copy = json_incref(p->client_id);
        json_object_set_new(msg, "id", json_integer(p->iid));
        int rc = mcp_child_send(s->child, msg);
        json_object_set_new(msg, "id", copy);
        if (rc) {
            why = rc == -ENOBUFS ? "the session's process is not reading: try later"
                                 : "the session's process has gone";
            pending_free(p);
        } else {
            p->next = s->pending;
            s->pending = p;
            s->npending++;
            return;
        }
    }
    answer_error(ex, id, JSONRPC_INTERNAL_ERROR, why);
    exchange_settle(ex);
}

/* --- what the child says ---------------------------------------------------- */

/* The pending of s that the child knows as iid (unlinked when take), or NULL. */
static struct mcp_pending *find_pending(struct mcp_session *s, const json_t *iid,
                                        bool take)
{
    if (!json_is_integer(iid))
        return NULL;
    for (struct mcp_pending **pp = &s->pending; *pp; pp = &(*pp)->next)
        if ((*pp)->iid == json_integer_value(iid)) {
            struct mcp_pending *p = *pp;
            if (take) {
                *pp = p->next;
                s->npending--;
            }
            return p;
        }
    return NULL;
}

static void on_child_message(void *arg, json_t *msg)
{
    struct mcp_session *s = arg;
    s->last_active = monotime_now();
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && strcmp(method, "notifications/progress") == 0) {
        json_t *params = json_object_get(msg, "params");
        struct mcp_pending *p =
            find_pending(s, json_object_get(params, "progressToken"), false);
        if (p && p->token) {
            json_object_set(params, "progressToken", p->token);
            exchange_emit(p->ex, msg);
        }
        return;
    }
    if (method)
        return; /* it sends no other notification, and no request */
    struct mcp_pending *p = find_pending(s, json_object_get(msg, "id"), true);
    if (!p) {
        if (json_is_null(json_object_get(msg, "id")))
            log_warn("mcp session %.8s...: its process refused a message", s->id);
        return; /* an answer nobody waits for any more */
    }
    json_object_set(msg, "id", p->client_id);
    struct mcp_exchange *ex = p->ex;
    pending_free(p);
    exchange_emit(ex, msg);
    exchange_settle(ex);
}

static void on_child_exit(void *arg)
{
    struct mcp_session *s = arg;
    s->child = NULL; /* freed when this returns */
    mcp_session_end(&s, "its process has exited");
}

/* --- sessions ------------------------------------------------------------------ */

int mcp_session_notify(struct mcp_session *s, json_t *msg)
{
    s->last_active = monotime_now();
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (!method || strcmp(method, "notifications/cancelled") != 0)
        return mcp_child_send(s->child, msg);
    json_t *params = json_object_get(msg, "params");
    json_t *rid = json_object_get(params, "requestId");
    for (struct mcp_pending **pp = &s->pending; *pp; pp = &(*pp)->next) {
        struct mcp_pending *p = *pp;
        if (!rid || !json_equal(p->client_id, rid))
            continue;
        json_t *copy = json_incref(rid);
        json_object_set_new(params, "requestId", json_integer(p->iid));
        int rc = mcp_child_send(s->child, msg); /* the child interrupts the cell */
        json_object_set_new(params, "requestId", copy);
        *pp = p->next;
        s->npending--;
        struct mcp_exchange *ex = p->ex;
        if (!ex->sse)
            answer_error(ex, p->client_id, CANCELLED_CODE, "the request was cancelled");
        pending_free(p);
        exchange_settle(ex);
        return rc;
    }
    return 0; /* a request already answered, or never made */
}

const char *mcp_session_id(const struct mcp_session *s)
{
    return s->id;
}

struct mcp_session *mcp_session_find(struct mcp_sessions *ss, const char *id)
{
    size_t n = strlen(id);
    if (n != MCP_SESSION_ID_LEN)
        return NULL;
    for (struct mcp_session *s = ss->head; s; s = s->next)
        if (CRYPTO_memcmp(s->id, id, n) == 0)
            return s;
    return NULL;
}

int mcp_session_new(struct mcp_sessions *ss, struct mcp_session **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (ss->children.count >= ss->max)
        return errbuf_set(503, err, errlen,
                          "the server runs its limit of %d MCP sessions", ss->max),
               503;
    struct mcp_session *s = calloc(1, sizeof *s);
    if (!s || auth_token_generate(s->id, sizeof s->id)) {
        free(s);
        return errbuf_set(500, err, errlen, "cannot make a session"), 500;
    }
    s->ss = ss;
    s->last_active = monotime_now();
    struct mcp_child_hooks hooks = {on_child_message, on_child_exit, s};
    char why[1024], name[16]; /* the log names a session by its id's start only */
    snprintf(name, sizeof name, "%.8s...", s->id);
    if (mcp_child_start(&ss->children, ss->kopts, ss->workspace, ss->private_dir, name,
                        &hooks, &s->child, why, sizeof why)) {
        log_error("mcp session: its process did not start: %s", why);
        free(s);
        return errbuf_set(500, err, errlen, "the MCP session did not start: %s", why),
               500;
    }
    s->next = ss->head;
    ss->head = s;
    ss->count++;
    ss->started++;
    log_info("mcp session %.8s...: started (pid %d)", s->id, mcp_child_pid(s->child));
    *out = s;
    return 0;
}

/* Tells the child that every request in flight is cancelled (so that a
 * running cell is interrupted before its input closes), and answers them. */
static void cancel_all(struct mcp_session *s, const char *why)
{
    while (s->pending) {
        struct mcp_pending *p = s->pending;
        s->pending = p->next;
        s->npending--;
        json_t *n = json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                              "notifications/cancelled", "params", "requestId",
                              (json_int_t)p->iid, "reason", why);
        if (n && s->child)
            mcp_child_send(s->child, n);
        json_decref(n);
        char text[160];
        snprintf(text, sizeof text, "the MCP session has ended: %s", why);
        struct mcp_exchange *ex = p->ex;
        answer_error(ex, p->client_id, JSONRPC_INTERNAL_ERROR, text);
        pending_free(p);
        exchange_settle(ex);
    }
}

void mcp_session_end(struct mcp_session **sp, const char *why)
{
    struct mcp_session *s = *sp;
    *sp = NULL;
    if (!s)
        return;
    struct mcp_sessions *ss = s->ss;
    for (struct mcp_session **pp = &ss->head; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    ss->count--;
    ss->ended++;
    log_info("mcp session %.8s...: ended: %s", s->id, why);
    cancel_all(s, why);
    for (struct mcp_exchange *ex = ss->exchanges; ex; ex = ex->next)
        if (ex->sess == s)
            ex->sess = NULL;
    mcp_child_stop(&s->child);
    free(s);
}

/* --- the whole ------------------------------------------------------------------ */

static void on_cull(lws_sorted_usec_list_t *sul)
{
    struct mcp_sessions *ss = lws_container_of(sul, struct mcp_sessions, cull_timer);
    double now = monotime_now();
    struct mcp_session *s = ss->head;
    while (s) {
        struct mcp_session *next = s->next;
        if (now - s->last_active > ss->cull_idle_s && (!s->npending || ss->cull_busy)) {
            ss->culled++;
            mcp_session_end(&s, "idle past the cull timeout");
        }
        s = next;
    }
    double t = ss->cull_idle_s / 2 < 5 ? ss->cull_idle_s / 2 : 5;
    lws_sul_schedule(ss->children.ctx, 0, &ss->cull_timer, on_cull,
                     (lws_usec_t)((t > 0.2 ? t : 0.2) * LWS_US_PER_SEC));
}

void mcp_sessions_init(struct mcp_sessions *ss, struct lws_context *ctx,
                       struct lws_vhost *vh, const struct options *kopts,
                       const char *workspace, const char *private_dir, int max,
                       double cull_idle_s, bool cull_busy, bool relay_logs)
{
    memset(ss, 0, sizeof *ss);
    mcp_child_set_init(&ss->children, ctx, vh, relay_logs);
    ss->kopts = kopts;
    ss->workspace = workspace;
    ss->private_dir = private_dir;
    ss->max = max > 0 ? max : MCP_SESSIONS_MAX;
    ss->cull_idle_s = cull_idle_s;
    ss->cull_busy = cull_busy;
    if (cull_idle_s > 0)
        on_cull(&ss->cull_timer);
}

void mcp_sessions_release(struct mcp_sessions *ss)
{
    lws_sul_cancel(&ss->cull_timer);
    while (ss->head) {
        struct mcp_session *s = ss->head;
        mcp_session_end(&s, "the server stops");
    }
    while (ss->exchanges) {
        struct mcp_exchange *ex = ss->exchanges;
        if (ex->st)
            http_stream_end(ex->st);
        ex->st = NULL;
        exchange_free(ex);
    }
    mcp_child_set_release(&ss->children);
}
