/* e2b_exec: contexts and streamed cells (e2b_exec.h).
 *
 * The hard part is that a cell has three owners in turn and any of them
 * may go first: the client (its stream gone: the cell is interrupted), the
 * kernel (dead or removed: an error line, then the end), and the cell
 * itself (idle: the end). A cell lives in its context's list from the
 * request on; the one path that frees it is cell_free, called where the
 * list is walked no further. The client's going is told when its
 * connection closes, never from inside a write, so the cell is freed
 * there. Lines made before the stream opens (http.c opens it as soon as
 * the route returns) wait in the cell, within E2B_PRE_MAX. */
#include "kernel/serve/e2b_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/e2b_env.h"
#include "kernel/serve/e2b_result.h"
#include "kernel/serve/stream.h"
#include "kernel/util/log.h"
#include "protocol/errbuf.h"

struct e2b {
    void (*prev_iopub)(void *arg, struct serve_kernel *k, const struct msg *m,
                       unsigned long long seq);
    void (*prev_dead)(void *arg, struct serve_kernel *k);
    void (*prev_gone)(void *arg, struct serve_kernel *k);
    void *prev_arg;
    char default_id[MODEL_ID_LEN + 1];
};

struct e2b_cell;

struct e2b_ctx {
    struct serve *s;
    char *cwd;
    struct e2b_cell *cells;
    int ncells;
    bool starting; /* its kernel is starting for us: cells wait */
    char failed[512];
};

struct e2b_cell {
    struct e2b_cell *next;
    struct e2b_ctx *ctx;
    struct serve_kernel *k;
    struct http_stream *st; /* NULL before it opens and once it has gone */
    char *code, *env_set, *env_restore;
    char msg_id[CLIENT_ID_LEN];
    struct e2b_result_cell cell;
    unsigned long lines;
    bool sent, over;
    char *pre; /* lines before the stream opened */
    size_t pre_len;
    lws_sorted_usec_list_t timer; /* the keepalive */
};

static void cell_free(struct e2b_cell *c)
{
    struct e2b_ctx *ctx = c->ctx;
    for (struct e2b_cell **p = &ctx->cells; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            ctx->ncells--;
            break;
        }
    lws_sul_cancel(&c->timer);
    if (c->st)
        http_stream_on_gone(c->st, NULL, NULL);
    free(c->code);
    free(c->env_set);
    free(c->env_restore);
    free(c->pre);
    free(c);
}

static void on_keepalive(lws_sorted_usec_list_t *sul);

static void arm_keepalive(struct e2b_cell *c)
{
    lws_sul_schedule(c->ctx->s->ctx, 0, &c->timer, on_keepalive,
                     (lws_usec_t)(E2B_KEEPALIVE_S * LWS_US_PER_SEC));
}

/* The line goes to the client (or waits for its stream). */
static void put(struct e2b_cell *c, const char *line, size_t len)
{
    if (c->st) {
        if (http_stream_write(c->st, line, len) == 0)
            arm_keepalive(c);
        return; /* a stream that failed tells its going through on_stream_gone */
    }
    if (c->pre_len + len > E2B_PRE_MAX)
        return;
    char *grown = realloc(c->pre, c->pre_len + len);
    if (!grown)
        return;
    memcpy(grown + c->pre_len, line, len);
    c->pre = grown;
    c->pre_len += len;
}

static void put_json(struct e2b_cell *c, json_t *obj)
{
    char *line = NULL;
    size_t len = 0;
    if (e2b_result_line(obj, &line, &len) == 0)
        put(c, line, len);
    free(line);
    json_decref(obj);
}

/* The last line, and the end of the answer: the cell is freed, unless its
 * stream has not opened yet (then at its opening). */
static void finish(struct e2b_cell *c)
{
    if (c->over)
        return;
    c->over = true;
    put_json(c, e2b_result_end());
    if (!c->st)
        return; /* its stream, when it opens, takes the lines and ends */
    struct http_stream *st = c->st;
    http_stream_on_gone(st, NULL, NULL);
    c->st = NULL;
    http_stream_end(st);
    cell_free(c);
}

static void fail(struct e2b_cell *c, const char *name, const char *value)
{
    if (!c->over)
        put_json(c, e2b_result_error(name, value, ""));
    finish(c);
}

static void interrupt_if_running(struct e2b_cell *c)
{
    if (!c->over && c->sent && c->cell.input_accepted && !c->k->dead_at) {
        log_info("an E2B client went before its cell ended: interrupting it");
        registry_interrupt(c->k);
    }
}

/* The keepalive after E2B_KEEPALIVE_S of silence. http.c opens a stream as
 * soon as the route has answered, so a cell whose stream has not opened by
 * then never will (its headers could not be written): it goes. */
static void on_keepalive(lws_sorted_usec_list_t *sul)
{
    struct e2b_cell *c = lws_container_of(sul, struct e2b_cell, timer);
    if (!c->st) {
        interrupt_if_running(c);
        cell_free(c);
        return;
    }
    put_json(c, e2b_result_keepalive()); /* which arms the next */
}

/* The client went before the end (told from the connection's close, after
 * the stream is freed): its cell is interrupted if it runs, and goes. */
static void on_stream_gone(void *arg)
{
    struct e2b_cell *c = arg;
    c->st = NULL;
    interrupt_if_running(c);
    cell_free(c);
}

static void on_stream_open(void *arg, struct http_stream *st)
{
    struct e2b_cell *c = arg;
    c->st = st;
    http_stream_on_gone(st, on_stream_gone, c);
    int rc = c->pre_len ? http_stream_write(st, c->pre, c->pre_len) : 0;
    free(c->pre);
    c->pre = NULL;
    c->pre_len = 0;
    if (c->over && !rc) { /* its end line was among them */
        http_stream_on_gone(st, NULL, NULL);
        c->st = NULL;
        http_stream_end(st);
        cell_free(c);
        return;
    }
    arm_keepalive(c);
}

/* --- sending --------------------------------------------------------------- */

static int send_one(struct client *cl, const char *code, bool silent, char *id)
{
    return client_execute_quiet(
        cl, code, CLIENT_EXEC_KEEP_GOING | (silent ? CLIENT_EXEC_SILENT : 0), id);
}

/* The cell (with its env_vars around it) to the kernel. */
static void send_cell(struct e2b_cell *c)
{
    struct client *cl = &c->k->client;
    int rc = 0;
    if (c->env_set)
        rc = send_one(cl, c->env_set, true, NULL);
    if (!rc)
        rc = send_one(cl, c->code, false, c->msg_id);
    if (!rc && c->env_restore)
        rc = send_one(cl, c->env_restore, true, NULL);
    free(c->code);
    c->code = NULL;
    if (rc) {
        fail(c, "ContextError", "cannot send the cell to the context's kernel");
        return;
    }
    c->sent = true;
    registry_touch(c->k);
}

/* --- the registry's hooks ------------------------------------------------- */

static bool counted(const char *type)
{
    return strcmp(type, "stream") == 0 || strcmp(type, "execute_result") == 0 ||
           strcmp(type, "display_data") == 0;
}

static void cell_msg(struct e2b_cell *c, const struct msg *m)
{
    json_t *obj = NULL;
    const char *type = msg_type(m);
    const char *date = json_string_value(json_object_get(m->header, "date"));
    if (e2b_result_convert(&c->cell, type, date, m->content, &obj) == 0 && obj) {
        if (!counted(type) || c->lines < E2B_MAX_LINES)
            put_json(c, obj);
        else
            json_decref(obj);
        if (counted(type) && ++c->lines == E2B_MAX_LINES) {
            char text[128];
            snprintf(text, sizeof text,
                     "[output stopped: the first %d lines of this cell were sent]\n",
                     E2B_MAX_LINES);
            put_json(c, json_pack("{s:s, s:s}", "type", "stderr", "text", text));
        }
    }
    if (c->cell.ended) {
        registry_drain_shell(c->k);
        finish(c);
    }
}

static void hook_iopub(void *arg, struct serve_kernel *k, const struct msg *m,
                       unsigned long long seq)
{
    struct e2b *e = arg;
    if (e->prev_iopub)
        e->prev_iopub(e->prev_arg, k, m, seq);
    struct e2b_ctx *ctx = k->e2b;
    const char *parent = json_string_value(json_object_get(m->parent_header, "msg_id"));
    if (!ctx || !parent)
        return;
    for (struct e2b_cell *c = ctx->cells; c; c = c->next)
        if (c->sent && !c->over && strcmp(c->msg_id, parent) == 0) {
            cell_msg(c, m); /* may free c: the walk ends here */
            return;
        }
}

void e2b_exec_cut(struct serve_kernel *k, const char *name, const char *value,
                  bool interrupt)
{
    struct e2b_ctx *ctx = k->e2b;
    if (!ctx)
        return;
    bool running = false;
    struct e2b_cell *c = ctx->cells, *next;
    for (; c; c = next) {
        next = c->next;
        running = running || (c->sent && c->cell.input_accepted && !c->over);
        if (!c->over)
            fail(c, name, value); /* frees c, or leaves it for its stream */
    }
    if (interrupt && running && !k->dead_at)
        registry_interrupt(k);
}

static void hook_dead(void *arg, struct serve_kernel *k)
{
    struct e2b *e = arg;
    if (e->prev_dead)
        e->prev_dead(e->prev_arg, k);
    e2b_exec_cut(k, "ContextDied", "the context's kernel died", false);
}

static void hook_gone(void *arg, struct serve_kernel *k)
{
    struct e2b *e = arg;
    if (e->prev_gone)
        e->prev_gone(e->prev_arg, k);
    struct e2b_ctx *ctx = k->e2b;
    if (!ctx)
        return;
    e2b_exec_cut(k, "ContextGone",
                 ctx->failed[0] ? ctx->failed : "the context was removed", false);
    while (ctx->cells) { /* streams that have not opened, or have gone */
        struct e2b_cell *c = ctx->cells;
        if (c->st) {
            struct http_stream *st = c->st;
            http_stream_on_gone(st, NULL, NULL);
            c->st = NULL;
            http_stream_end(st);
        }
        cell_free(c);
    }
    if (strcmp(e->default_id, k->id) == 0)
        e->default_id[0] = 0;
    free(ctx->cwd);
    free(ctx);
    k->e2b = NULL;
}

/* --- contexts ---------------------------------------------------------------- */

bool e2b_context_attach(struct serve *s, struct serve_kernel *k, const char *cwd)
{
    if (k->e2b)
        return true;
    struct e2b_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx || !(ctx->cwd = strdup(cwd ? cwd : E2B_DEFAULT_CWD))) {
        free(ctx);
        return false;
    }
    ctx->s = s;
    k->e2b = ctx;
    return true;
}

bool e2b_is_context(const struct serve_kernel *k)
{
    return k->e2b != NULL;
}

json_t *e2b_context_json(const struct serve_kernel *k)
{
    const struct e2b_ctx *ctx = k->e2b;
    return json_pack("{s:s, s:s, s:s}", "id", k->id, "language", "python", "cwd",
                     ctx ? ctx->cwd : E2B_DEFAULT_CWD);
}

/* The default context's kernel has started (k) or not (k NULL: it goes
 * next, and its cells end with err). */
static void default_ready(void *arg, struct serve_kernel *k, int status, const char *err)
{
    struct e2b_ctx *ctx = arg;
    (void)status;
    ctx->starting = false;
    if (!k) {
        snprintf(ctx->failed, sizeof ctx->failed, "%s", err ? err : "it did not start");
        return;
    }
    struct e2b_cell *c = ctx->cells, *next;
    for (; c; c = next) {
        next = c->next;
        if (!c->sent && !c->over)
            send_cell(c); /* may free c */
    }
}

int e2b_default_context(struct serve *s, struct serve_kernel **out, char *err,
                        size_t errlen)
{
    struct e2b *e = s->e2b;
    struct serve_kernel *k =
        e->default_id[0] ? registry_find(&s->reg, e->default_id) : NULL;
    if (k && !k->dead_at && k->e2b) {
        *out = k;
        return 0;
    }
    struct e2b_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx || !(ctx->cwd = strdup(E2B_DEFAULT_CWD))) {
        free(ctx);
        return errbuf_set(500, err, errlen, "out of memory");
    }
    ctx->s = s;
    ctx->starting = true;
    int status =
        registry_start_async(&s->reg, NULL, NULL, default_ready, ctx, &k, err, errlen);
    if (status) {
        free(ctx->cwd);
        free(ctx);
        return status;
    }
    k->e2b = ctx;
    snprintf(e->default_id, sizeof e->default_id, "%s", k->id);
    *out = k;
    return 0;
}

/* --- a cell ------------------------------------------------------------------ */

static struct e2b_cell *cell_new(struct e2b_ctx *ctx, struct serve_kernel *k,
                                 const char *code, const json_t *env_vars, char *err,
                                 size_t errlen, int *status)
{
    struct e2b_cell *c = calloc(1, sizeof *c);
    *status = 500;
    if (!c || !(c->code = strdup(code))) {
        free(c);
        errbuf_set(500, err, errlen, "out of memory");
        return NULL;
    }
    int rc = e2b_env_code(env_vars, &c->env_set, &c->env_restore, err, errlen);
    if (rc) {
        *status = rc == -EINVAL ? 400 : 500;
        free(c->code);
        free(c);
        return NULL;
    }
    c->ctx = ctx;
    c->k = k;
    e2b_result_cell_init(&c->cell);
    struct e2b_cell **p = &ctx->cells; /* in order: the last one waits last */
    while (*p)
        p = &(*p)->next;
    *p = c;
    ctx->ncells++;
    return c;
}

int e2b_exec_start(struct serve *s, struct serve_kernel *k, const char *code,
                   const json_t *env_vars, struct routes_resp *out, char *err,
                   size_t errlen)
{
    struct e2b_ctx *ctx = k->e2b;
    if (!ctx && !e2b_context_attach(s, k, NULL))
        return errbuf_set(500, err, errlen, "out of memory");
    ctx = k->e2b;
    if (k->dead_at)
        return errbuf_set(409, err, errlen, "the context's kernel is dead");
    if (k->ready && !ctx->starting)
        return errbuf_set(409, err, errlen, "the context's kernel is starting");
    if (ctx->ncells >= E2B_MAX_CELLS)
        return errbuf_set(429, err, errlen,
                          "the context has %d cells waiting or running already",
                          E2B_MAX_CELLS);
    int status;
    struct e2b_cell *c = cell_new(ctx, k, code, env_vars, err, errlen, &status);
    if (!c)
        return status;
    out->status = 200;
    out->content_type = "application/x-ndjson";
    out->stream_open = on_stream_open;
    out->stream_arg = c;
    arm_keepalive(c);
    if (!k->ready)
        send_cell(c); /* an error in it waits in the cell for the stream */
    return 0;
}

/* --- the server's state ----------------------------------------------------- */

int e2b_hook(struct serve *s)
{
    struct e2b *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->prev_iopub = s->reg.on_iopub;
    e->prev_dead = s->reg.on_dead;
    e->prev_gone = s->reg.on_gone;
    e->prev_arg = s->reg.hook_arg;
    s->reg.on_iopub = hook_iopub;
    s->reg.on_dead = hook_dead;
    s->reg.on_gone = hook_gone;
    s->reg.hook_arg = e;
    s->e2b = e;
    return 0;
}

void e2b_release(struct serve *s)
{
    free(s->e2b);
    s->e2b = NULL;
}
