/* e2b: E2B's routes (e2b.h).
 *
 * What E2B's server answers, kept where its SDK looks: /health says "OK"
 * (a JSON string); a context is {"id", "language", "cwd"}; a language
 * other than Python, or a context named together with a language, is a
 * 400 whose message says why; a context that is not there is a 404 (the
 * SDK's NotFoundError). Python is the one language: "python" in any case,
 * or "python3". */
#include "kernel/serve/e2b.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel/serve/e2b_exec.h"
#include "kernel/serve/e2b_files.h"
#include "kernel/serve/model.h"
#include "kernel/serve/sessions.h"

#define E2B_SEGMENTS 4

/* Member key of o: absent or null (*v NULL), else of the type wanted. */
static bool optional_string(const json_t *o, const char *key, const char **v)
{
    const json_t *m = json_object_get(o, key);
    *v = json_string_value(m);
    return !m || json_is_null(m) ||
           (json_is_string(m) && strlen(*v) == json_string_length(m));
}

static bool python(const char *language)
{
    return !language || strcasecmp(language, "python") == 0 ||
           strcasecmp(language, "python3") == 0;
}

static void not_python(struct routes_resp *out, const char *language)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "the language %.64s is not supported here: this server runs Python only",
             language);
    routes_error(out, 400, msg);
}

/* The context of id, or NULL with a 404 in out. */
static struct serve_kernel *find_context(struct serve *s, const char *id,
                                         struct routes_resp *out)
{
    struct serve_kernel *k = model_id_valid(id) ? registry_find(&s->reg, id) : NULL;
    if (!k) {
        char msg[128];
        snprintf(msg, sizeof msg, "no such context: %.40s", id);
        routes_error(out, 404, msg);
    }
    return k;
}

/* The context a cell runs in: the one named, or the default one (started
 * on first use). NULL with the error in out. */
static struct serve_kernel *cell_context(struct serve *s, const char *id,
                                         struct routes_resp *out)
{
    if (id)
        return find_context(s, id, out);
    struct serve_kernel *k = NULL;
    char err[1200];
    int status = e2b_default_context(s, &k, err, sizeof err);
    if (status)
        routes_error(out, status, err);
    return status ? NULL : k;
}

static void execute(struct serve *s, const struct serve_request *rq,
                    struct routes_resp *out)
{
    json_t *req = resp_body_object(rq->body, rq->len, out);
    if (!req)
        return;
    const char *code = NULL, *ctx_id, *language;
    const json_t *code_v = json_object_get(req, "code");
    const json_t *env = json_object_get(req, "env_vars");
    struct serve_kernel *k = NULL;
    if (!json_is_string(code_v) ||
        strlen(code = json_string_value(code_v)) != json_string_length(code_v))
        routes_error(out, 400, "code must be a string, without NUL");
    else if (!optional_string(req, "context_id", &ctx_id) ||
             !optional_string(req, "language", &language))
        routes_error(out, 400, "context_id and language must be strings");
    else if (ctx_id && language)
        routes_error(out, 400, "give a context_id or a language, not both");
    else if (!python(language))
        not_python(out, language);
    else if (env && !json_is_null(env) && !json_is_object(env))
        routes_error(out, 400, "env_vars must be an object of strings");
    else
        k = cell_context(s, ctx_id, out);
    char err[1200];
    int status = k ? e2b_exec_start(s, k, code, env, out, err, sizeof err) : 0;
    if (status)
        routes_error(out, status, err);
    json_decref(req);
}

/* The answer to POST /contexts once its kernel has started (k) or not. */
static void context_started(struct serve *s, struct routes_resp *out,
                            struct serve_kernel *k, int status, const char *err,
                            const char *context)
{
    (void)s;
    (void)context;
    if (!k)
        routes_error(out, status ? status : 500, err);
    else
        resp_json(out, 200, e2b_context_json(k));
}

/* The body of POST /contexts checked: 0 with *cwd (borrowed from req, NULL
 * for the default), or -1 with a 400 in out. */
static int context_body(const json_t *req, const char **cwd, struct routes_resp *out)
{
    const char *language;
    if (!optional_string(req, "language", &language) || !optional_string(req, "cwd", cwd))
        routes_error(out, 400, "language and cwd must be strings");
    else if (!python(language))
        not_python(out, language);
    else if (*cwd && (!**cwd || strlen(*cwd) > E2B_CWD_MAX))
        routes_error(out, 400, "cwd must be a path of 1 to 1024 bytes");
    else
        return 0;
    return -1;
}

/* POST /contexts: a kernel started, answered once it is ready. */
static void create_context(struct serve *s, const struct serve_request *rq,
                           struct routes_resp *out)
{
    json_t *req = resp_body_object(rq->body, rq->len, out);
    const char *cwd = NULL;
    if (!req || context_body(req, &cwd, out)) {
        json_decref(req);
        return;
    }
    char err[1200];
    struct serve_kernel *k = NULL;
    int status = out->defer_fn ? registry_start_async(&s->reg, NULL, NULL, out->defer_fn,
                                                      out->defer_arg, &k, err, sizeof err)
                               : registry_start(&s->reg, NULL, NULL, &k, err, sizeof err);
    if (status) {
        routes_error(out, status, err);
    } else if (!e2b_context_attach(s, k, cwd)) {
        registry_forget_waiter(k);
        registry_remove(&s->reg, k);
        routes_error(out, 500, "out of memory");
    } else if (out->defer_fn) {
        out->pending = true;
        out->pending_kernel = k;
        out->finish = context_started;
    } else {
        context_started(s, out, k, 0, NULL, NULL);
    }
    json_decref(req);
}

static void list_contexts(struct serve *s, struct routes_resp *out)
{
    json_t *a = json_array();
    for (struct serve_kernel *k = s->reg.head; k && a; k = k->next)
        if (e2b_is_context(k) && !k->dead_at)
            json_array_append_new(a, e2b_context_json(k));
    resp_json(out, 200, a);
}

static void one_context(struct serve *s, const char *method, char **seg, int n,
                        struct routes_resp *out)
{
    struct serve_kernel *k = find_context(s, seg[1], out);
    char err[1024];
    if (!k)
        return;
    if (n == 2 && strcmp(method, "DELETE") == 0) {
        sessions_forget_kernel(s, k);
        registry_remove(&s->reg, k);
        out->status = 204;
    } else if (n == 3 && strcmp(seg[2], "restart") == 0 && strcmp(method, "POST") == 0) {
        e2b_exec_cut(k, "ContextRestarting", "Context was restarted", true);
        if (registry_restart(k, err, sizeof err))
            routes_error(out, k->dead_at || k->ready ? 409 : 500, err);
        else
            resp_json(out, 200, e2b_context_json(k));
    } else if (n == 2 && strcmp(method, "GET") == 0) {
        resp_json(out, 200, e2b_context_json(k));
    } else {
        routes_error(out, n <= 3 ? 405 : 404,
                     n <= 3 ? "method not allowed" : "not found");
    }
}

static void contexts(struct serve *s, const struct serve_request *rq, char **seg, int n,
                     struct routes_resp *out)
{
    if (n == 1 && strcmp(rq->method, "GET") == 0)
        list_contexts(s, out);
    else if (n == 1 && strcmp(rq->method, "POST") == 0)
        create_context(s, rq, out);
    else if (n == 1)
        routes_error(out, 405, "method not allowed");
    else
        one_context(s, rq->method, seg, n, out);
}

bool e2b_handle(struct serve *s, const struct serve_request *rq, struct routes_resp *out)
{
    char buf[512], *seg[E2B_SEGMENTS];
    int n = resp_split_path(rq->path, buf, sizeof buf, seg, E2B_SEGMENTS);
    if (n < 1)
        return false;
    if (strcmp(seg[0], "health") == 0 && n == 1) {
        if (strcmp(rq->method, "GET") != 0) {
            routes_error(out, 405, "method not allowed");
        } else {
            out->status = 200;
            out->text = strdup("\"OK\"");
            out->status = out->text ? 200 : 500;
        }
    } else if (strcmp(seg[0], "execute") == 0 && n == 1) {
        if (strcmp(rq->method, "POST") == 0)
            execute(s, rq, out);
        else
            routes_error(out, 405, "method not allowed");
    } else if (strcmp(seg[0], "contexts") == 0) {
        contexts(s, rq, seg, n, out);
    } else if (!e2b_files_serve(s, rq, out)) {
        return false;
    }
    return true;
}
