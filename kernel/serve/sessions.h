/* sessions: /api/sessions, for clients that manage sessions themselves
 * (@jupyterlab/services' SessionManager): a session ties a path, a name and
 * a type to a kernel of the registry, as jupyter_server's session manager
 * does, in memory. Deleting a session shuts its kernel down. */
#ifndef SANDPIT_SERVE_SESSIONS_H
#define SANDPIT_SERVE_SESSIONS_H

#include <stddef.h>

#include "kernel/serve/resp.h"
#include "kernel/serve/server.h"

/* Answers a request on /api/sessions (id: the segment after it, or NULL;
 * n: the path's segment count). */
void sessions_handle(struct serve *s, const char *method, const char *body, size_t len,
                     const char *id, int n, struct routes_resp *out);

/* The kernel k is going: the sessions on it go too. */
void sessions_forget_kernel(struct serve *s, struct serve_kernel *k);

/* The answer to POST /api/sessions once its new kernel has started (k) or
 * not (k NULL, status, err); context is the session's id. */
void sessions_kernel_started(struct serve *s, struct routes_resp *out,
                             struct serve_kernel *k, int status, const char *err,
                             const char *context);

/* Frees every session. */
void sessions_release(struct serve *s);

#endif
