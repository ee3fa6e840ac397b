/* e2b: E2B's code-interpreter API, as E2B's template server serves it in a
 * sandbox: GET /health, POST /execute (a cell streamed as NDJSON lines),
 * and /contexts (list, create, restart, delete), each context a kernel of
 * the registry's (e2b_exec.h). The routes are reached two ways: at the
 * root with the server's token, like every route, or under the
 * /e2b/<secret>/ prefix that E2B's SDK keeps from E2B_SANDBOX_URL (http.c
 * checks the secret and strips the prefix; there, only these routes
 * answer). Every body is hostile: checked member by member, answered with
 * a JSON error ({"reason", "message"}) and a 4xx when it is wrong. */
#ifndef SANDPIT_SERVE_E2B_H
#define SANDPIT_SERVE_E2B_H

#include <stdbool.h>

#include "kernel/serve/request.h"
#include "kernel/serve/resp.h"
#include "kernel/serve/server.h"

/* Answers rq into out if its path is one of E2B's (true); false, with out
 * untouched, for any other path. */
bool e2b_handle(struct serve *s, const struct serve_request *rq, struct routes_resp *out);

#endif
