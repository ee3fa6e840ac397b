/* routes: the REST API (routes.h).
 *
 * Paths are matched segment by segment against fixed words and kernel ids
 * (a UUID, checked before it is looked up), so that nothing a client writes
 * becomes a file name: the logos are the three files compiled into the
 * binary, found by an exact name. */
#include "kernel/serve/routes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/embedded.h"
#include "kernel/serve/e2b.h"
#include "kernel/serve/e2b_exec.h"
#include "kernel/serve/e2b_files.h"
#include "kernel/serve/mcp_http.h"
#include "kernel/serve/metrics.h"
#include "kernel/serve/request.h"
#include "kernel/serve/sessions.h"
#include "kernel/version.h"

#define MAX_SEGMENTS 6

static void logo(struct routes_resp *out, const char *name, const char *file)
{
    static const char *const files[][3] = {
        {"logo-32x32.png", "kernelspec/logo-32x32.png", "image/png"},
        {"logo-64x64.png", "kernelspec/logo-64x64.png", "image/png"},
        {"logo-svg.svg", "kernelspec/logo-svg.svg", "image/svg+xml"},
    };
    if (strcmp(name, REGISTRY_KERNEL_NAME) == 0)
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            const struct embedded_file *f;
            if (strcmp(file, files[i][0]) == 0 &&
                (f = embedded_logos_find(files[i][1]))) {
                out->status = 200;
                out->raw = f->data;
                out->raw_len = f->len;
                out->content_type = files[i][2];
                return;
            }
        }
    routes_error(out, 404, "no such file");
}

/* The kernelspec of the server's one kind of kernel (name, spec, resources). */
static json_t *kernelspec(void)
{
    const char *n = REGISTRY_KERNEL_NAME;
    char l32[96], l64[96], svg[96];
    snprintf(l32, sizeof l32, "/kernelspecs/%s/logo-32x32.png", n);
    snprintf(l64, sizeof l64, "/kernelspecs/%s/logo-64x64.png", n);
    snprintf(svg, sizeof svg, "/kernelspecs/%s/logo-svg.svg", n);
    return json_pack("{s:s, s:{s:[s,s,s,s], s:s, s:s, s:s, s:{}, s:{}}, "
                     "s:{s:s, s:s, s:s}}",
                     "name", n, "spec", "argv", "sandpit", "kernel", "-f",
                     "{connection_file}", "display_name", "Python 3 (sandpit)",
                     "language", "python", "interrupt_mode", "message", "env", "metadata",
                     "resources", "logo-32x32", l32, "logo-64x64", l64, "logo-svg", svg);
}

static void kernelspecs(char **seg, int n, struct routes_resp *out)
{
    if (n == 2) {
        json_t *spec = kernelspec();
        resp_json(out, 200,
                  json_pack("{s:s, s:{s:o}}", "default", REGISTRY_KERNEL_NAME,
                            "kernelspecs", REGISTRY_KERNEL_NAME, spec));
    } else if (n == 3 && strcmp(seg[2], REGISTRY_KERNEL_NAME) == 0) {
        resp_json(out, 200, kernelspec());
    } else {
        routes_error(out, 404, "no such kernelspec");
    }
}

static void create_kernel(struct serve *s, const char *body, size_t len,
                          struct routes_resp *out)
{
    json_t *req = resp_body_object(body, len, out);
    if (!req)
        return;
    const json_t *name = json_object_get(req, "name");
    if (name && !json_is_string(name) && !json_is_null(name)) {
        json_decref(req);
        routes_error(out, 400, "name must be a string");
        return;
    }
    char err[1200];
    struct serve_kernel *k;
    const json_t *env = json_object_get(req, "env");
    int status =
        out->defer_fn
            ? registry_start_async(&s->reg, json_string_value(name), env, out->defer_fn,
                                   out->defer_arg, &k, err, sizeof err)
            : registry_start(&s->reg, json_string_value(name), env, &k, err, sizeof err);
    json_decref(req);
    if (status) {
        routes_error(out, status, err);
    } else if (out->defer_fn) {
        out->pending = true;
        out->pending_kernel = k;
        out->finish = routes_kernel_started;
    } else {
        routes_kernel_started(s, out, k, 0, NULL, NULL);
    }
}

void routes_kernel_started(struct serve *s, struct routes_resp *out,
                           struct serve_kernel *k, int status, const char *err,
                           const char *context)
{
    (void)s;
    (void)context;
    if (!k) {
        routes_error(out, status ? status : 500, err);
        return;
    }
    snprintf(out->location, sizeof out->location, "/api/kernels/%s", k->id);
    resp_json(out, 201, registry_model(k));
}

static void one_kernel(struct serve *s, const char *method, char **seg, int n,
                       struct routes_resp *out)
{
    struct serve_kernel *k =
        model_id_valid(seg[2]) ? registry_find(&s->reg, seg[2]) : NULL;
    if (!k) {
        routes_error(out, 404, "no such kernel");
        return;
    }
    char err[1024];
    if (n == 3 && strcmp(method, "GET") == 0) {
        resp_json(out, 200, registry_model(k));
    } else if (n == 3 && strcmp(method, "DELETE") == 0) {
        sessions_forget_kernel(s, k);
        registry_remove(&s->reg, k);
        out->status = 204;
    } else if (n == 4 && strcmp(seg[3], "interrupt") == 0 &&
               strcmp(method, "POST") == 0) {
        if (registry_interrupt(k))
            routes_error(out, 409,
                         k->dead_at ? "the kernel cannot be interrupted: it is dead"
                                    : "the kernel is starting");
        else
            out->status = 204;
    } else if (n == 4 && strcmp(seg[3], "restart") == 0 && strcmp(method, "POST") == 0) {
        e2b_exec_cut(k, "ContextRestarting", "Context was restarted",
                     true); /* its E2B cells */
        if (registry_restart(k, err, sizeof err))
            routes_error(out, k->dead_at || k->ready ? 409 : 500, err);
        else
            resp_json(out, 200, registry_model(k));
    } else if (n == 4 && strcmp(seg[3], "channels") == 0) {
        routes_error(out, 400, "this is a WebSocket: it needs an Upgrade");
    } else {
        routes_error(out, n <= 4 ? 405 : 404,
                     n <= 4 ? "method not allowed" : "not found");
    }
}

static void kernels(struct serve *s, const char *method, const char *body, size_t len,
                    char **seg, int n, struct routes_resp *out)
{
    if (n == 2 && strcmp(method, "GET") == 0)
        resp_json(out, 200, registry_list(&s->reg));
    else if (n == 2 && strcmp(method, "POST") == 0)
        create_kernel(s, body, len, out);
    else if (n == 2)
        routes_error(out, 405, "method not allowed");
    else
        one_kernel(s, method, seg, n, out);
}

size_t routes_body_bound(const struct serve *s, const char *method, const char *path)
{
    size_t upload = e2b_files_body_bound(method, path, s->cfg.max_upload);
    return upload ? upload : s->cfg.max_body;
}

void routes_handle(struct serve *s, const struct serve_request *rq,
                   struct routes_resp *out)
{
    const char *method = rq->method, *body = rq->body;
    size_t len = rq->len;
    char buf[512], *seg[MAX_SEGMENTS];
    int n = resp_split_path(rq->path, buf, sizeof buf, seg, MAX_SEGMENTS);
    bool get = strcmp(method, "GET") == 0;
    out->status = 404;
    if (rq->e2b_prefix) {
        if (!e2b_handle(s, rq, out))
            routes_error(out, 404, "not found");
    } else if (n >= 1 && strcmp(seg[0], "api") == 0) {
        if (n == 1 && get)
            resp_json(out, 200, json_pack("{s:s}", "version", SANDPIT_VERSION));
        else if (n >= 2 && strcmp(seg[1], "kernelspecs") == 0 && get)
            kernelspecs(seg, n, out);
        else if (n >= 2 && strcmp(seg[1], "kernels") == 0)
            kernels(s, method, body, len, seg, n, out);
        else if (n >= 2 && strcmp(seg[1], "sessions") == 0)
            sessions_handle(s, method, body, len, n > 2 ? seg[2] : NULL, n, out);
        else
            routes_error(out, 404, "not found");
    } else if (n == 3 && strcmp(seg[0], "kernelspecs") == 0 && get) {
        logo(out, seg[1], seg[2]);
    } else if (n == 1 && strcmp(seg[0], "mcp") == 0) {
        mcp_http_handle(s, rq, out);
    } else if (n == 1 && strcmp(seg[0], "metrics") == 0 && get) {
        out->text = metrics_text(s);
        out->status = out->text ? 200 : 500;
        out->content_type = "text/plain; version=0.0.4";
    } else if (!e2b_handle(s, rq, out)) {
        routes_error(out, 404, "not found");
    }
}
