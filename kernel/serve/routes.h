/* routes: the REST API, jupyter_server's kernel API as Jupyter Kernel
 * Gateway serves it: /api, /api/kernelspecs, /kernelspecs/{name}/{file},
 * /api/kernels and each kernel, its interrupt and restart, /api/sessions,
 * /metrics. A request reaches here authenticated and whole (http.c); what
 * it answers is a struct routes_resp, whose JSON is new (http.c frees it). */
#ifndef SANDPIT_SERVE_ROUTES_H
#define SANDPIT_SERVE_ROUTES_H

#include <jansson.h>
#include <stddef.h>

#include "kernel/serve/resp.h"
#include "kernel/serve/server.h"

struct serve_request;

/* Answers the request rq. */
void routes_handle(struct serve *s, const struct serve_request *rq,
                   struct routes_resp *out);

/* The largest body http.c gathers for method path (the server's bound,
 * unless the route takes more). */
size_t routes_body_bound(const struct serve *s, const char *method, const char *path);

/* The answer to POST /api/kernels once the kernel has started (k) or not
 * (k NULL, status and err); context is unused. */
void routes_kernel_started(struct serve *s, struct routes_resp *out,
                           struct serve_kernel *k, int status, const char *err,
                           const char *context);

#endif
