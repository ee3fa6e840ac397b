/* sessions: /api/sessions (sessions.h). A session holds no kernel of its
 * own: it names one of the registry's by id, looked up at each use, so that
 * a kernel removed elsewhere (DELETE /api/kernels/{id}, culled, dead) takes
 * its sessions with it rather than leaving a pointer behind. */
#include "kernel/serve/sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSION_FIELD_MAX 1024

struct serve_session {
    char id[MODEL_ID_LEN + 1];
    char kernel_id[MODEL_ID_LEN + 1];
    char *path, *name, *type;
    struct serve_session *next;
};

static void session_free(struct serve_session *x)
{
    free(x->path);
    free(x->name);
    free(x->type);
    free(x);
}

static json_t *session_json(struct serve *s, const struct serve_session *x)
{
    struct serve_kernel *k = registry_find(&s->reg, x->kernel_id);
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s, s:s}}", "id", x->id, "path",
                     x->path, "name", x->name, "type", x->type, "kernel",
                     k ? registry_model(k) : json_null(), "notebook", "path", x->path,
                     "name", x->name);
}

static struct serve_session *find(struct serve *s, const char *id)
{
    for (struct serve_session *x = s->sessions; x && id; x = x->next)
        if (strcmp(x->id, id) == 0)
            return x;
    return NULL;
}

static void unlink_session(struct serve *s, struct serve_session *x)
{
    for (struct serve_session **p = &s->sessions; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            return;
        }
}

void sessions_forget_kernel(struct serve *s, struct serve_kernel *k)
{
    struct serve_session **p = &s->sessions;
    while (*p) {
        struct serve_session *x = *p;
        if (strcmp(x->kernel_id, k->id) == 0) {
            *p = x->next;
            session_free(x);
        } else {
            p = &x->next;
        }
    }
}

void sessions_release(struct serve *s)
{
    while (s->sessions) {
        struct serve_session *x = s->sessions;
        s->sessions = x->next;
        session_free(x);
    }
}

/* Sessions whose kernel has gone go too. */
static void prune(struct serve *s)
{
    struct serve_session **p = &s->sessions;
    while (*p) {
        struct serve_session *x = *p;
        if (!registry_find(&s->reg, x->kernel_id)) {
            *p = x->next;
            session_free(x);
        } else {
            p = &x->next;
        }
    }
}

/* A string member of o (absent: fallback), copied into *dst. False for a
 * member that is not a string or is too long. */
static bool take_string(const json_t *o, const char *key, const char *fallback,
                        char **dst)
{
    const json_t *v = json_object_get(o, key);
    const char *str = v ? json_string_value(v) : fallback;
    if (!str || strlen(str) > SESSION_FIELD_MAX ||
        (v && json_string_length(v) != strlen(str)))
        return !v && !fallback;
    char *copy = strdup(str);
    if (!copy)
        return false;
    free(*dst);
    *dst = copy;
    return true;
}

/* The kernel the body's "kernel" asks for: an existing one by id, or a new
 * one by name. 0 with *out, or an HTTP status with err. */
static int kernel_for(struct serve *s, const json_t *spec, const json_t *env,
                      struct routes_resp *defer, struct serve_kernel **out, char *err,
                      size_t errlen)
{
    const char *id = json_string_value(json_object_get(spec, "id"));
    if (id) {
        *out = model_id_valid(id) ? registry_find(&s->reg, id) : NULL;
        if (!*out)
            snprintf(err, errlen, "no such kernel");
        return *out ? 0 : 404;
    }
    const char *name = json_string_value(json_object_get(spec, "name"));
    if (!defer || !defer->defer_fn)
        return registry_start(&s->reg, name, env, out, err, errlen);
    int st = registry_start_async(&s->reg, name, env, defer->defer_fn, defer->defer_arg,
                                  out, err, errlen);
    if (!st) { /* answered by sessions_kernel_started */
        defer->pending = true;
        defer->pending_kernel = *out;
        defer->finish = sessions_kernel_started;
    }
    return st;
}

void sessions_kernel_started(struct serve *s, struct routes_resp *out,
                             struct serve_kernel *k, int status, const char *err,
                             const char *context)
{
    struct serve_session *x = find(s, context);
    if (!k || !x) {
        if (x) {
            unlink_session(s, x);
            session_free(x);
        }
        routes_error(out, k ? 500 : status,
                     k ? "the session was deleted while its kernel "
                         "started"
                       : err);
        return;
    }
    json_decref(out->json);
    out->json = session_json(s, x);
    out->status = 201;
}

static void create(struct serve *s, json_t *body, struct routes_resp *out)
{
    struct serve_session *x = calloc(1, sizeof *x);
    char err[1200];
    if (!x || !take_string(body, "path", "", &x->path) ||
        !take_string(body, "name", "", &x->name) ||
        !take_string(body, "type", "notebook", &x->type) || model_id_new(x->id)) {
        routes_error(out, 400, "path, name and type must be strings");
        goto fail;
    }
    for (struct serve_session *o = s->sessions; o; o = o->next)
        if (*x->path && strcmp(o->path, x->path) == 0 &&
            registry_find(&s->reg, o->kernel_id)) {
            session_free(x);
            json_decref(out->json);
            out->json = session_json(s, o);
            out->status = 201;
            return;
        }
    struct serve_kernel *k;
    int st = kernel_for(s, json_object_get(body, "kernel"),
                        json_object_get(json_object_get(body, "kernel"), "env"), out, &k,
                        err, sizeof err);
    if (st) {
        routes_error(out, st, err);
        goto fail;
    }
    snprintf(x->kernel_id, sizeof x->kernel_id, "%s", k->id);
    x->next = s->sessions;
    s->sessions = x;
    if (out->pending) {
        snprintf(out->context, sizeof out->context, "%s", x->id);
        return;
    }
    json_decref(out->json);
    out->json = session_json(s, x);
    out->status = 201;
    return;
fail:
    if (x)
        session_free(x);
}

static void patch(struct serve *s, struct serve_session *x, json_t *body,
                  struct routes_resp *out)
{
    char err[1200];
    if (!take_string(body, "path", x->path, &x->path) ||
        !take_string(body, "name", x->name, &x->name) ||
        !take_string(body, "type", x->type, &x->type)) {
        routes_error(out, 400, "path, name and type must be strings");
        return;
    }
    const json_t *spec = json_object_get(body, "kernel");
    if (json_is_object(spec)) {
        struct serve_kernel *k, *old = registry_find(&s->reg, x->kernel_id);
        int st =
            kernel_for(s, spec, json_object_get(spec, "env"), NULL, &k, err, sizeof err);
        if (st) {
            routes_error(out, st, err);
            return;
        }
        snprintf(x->kernel_id, sizeof x->kernel_id, "%s", k->id);
        if (old && old != k) {
            bool shared = false;
            for (struct serve_session *o = s->sessions; o; o = o->next)
                shared |= strcmp(o->kernel_id, old->id) == 0;
            if (!shared)
                registry_remove(&s->reg, old);
        }
    }
    json_decref(out->json);
    out->json = session_json(s, x);
    out->status = 200;
}

void sessions_handle(struct serve *s, const char *method, const char *body, size_t len,
                     const char *id, int n, struct routes_resp *out)
{
    prune(s);
    struct serve_session *x = id ? find(s, id) : NULL;
    json_t *req = NULL;
    if ((strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0) &&
        !(req = resp_body_object(body, len, out)))
        return;
    if (n == 2 && strcmp(method, "GET") == 0) {
        json_t *a = json_array();
        for (struct serve_session *o = s->sessions; o && a; o = o->next)
            json_array_append_new(a, session_json(s, o));
        json_decref(out->json);
        out->json = a;
        out->status = a ? 200 : 500;
    } else if (n == 2 && strcmp(method, "POST") == 0) {
        create(s, req, out);
    } else if (n != 3 || !x) {
        routes_error(out, n == 2 ? 405 : 404,
                     n == 2 ? "method not allowed" : "no such session");
    } else if (strcmp(method, "GET") == 0) {
        json_decref(out->json);
        out->json = session_json(s, x);
        out->status = 200;
    } else if (strcmp(method, "PATCH") == 0) {
        patch(s, x, req, out);
    } else if (strcmp(method, "DELETE") == 0) {
        struct serve_kernel *k = registry_find(&s->reg, x->kernel_id);
        unlink_session(s, x);
        session_free(x);
        if (k) {
            sessions_forget_kernel(s, k);
            registry_remove(&s->reg, k);
        }
        out->status = 204;
    } else {
        routes_error(out, 405, "method not allowed");
    }
    json_decref(req);
}
