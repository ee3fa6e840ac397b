/* e2b_exec: E2B's contexts and cells on the registry's kernels. A context
 * is a kernel of the registry's with a little state of e2b_exec's hung on
 * it (k->e2b: its cwd, its cells); a cell is one POST /execute, streamed
 * to its client as NDJSON lines while the kernel runs it. The data flow:
 * the route -> e2b_exec_start (an execute_request on the kernel's shell)
 * -> the registry's iopub hook -> e2b_result_convert/_line -> the HTTP
 * stream (stream.h) -> end_of_execution, always, whatever ended the cell:
 * its idle, the kernel's death or removal, a restart. A client that goes
 * away first has its cell interrupted. Ownership: the server's struct e2b
 * and every context's state are e2b_exec's, freed with the kernel (the
 * registry's on_gone hook) or at e2b_release; kernels stay the registry's. */
#ifndef SANDPIT_SERVE_E2B_EXEC_H
#define SANDPIT_SERVE_E2B_EXEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/serve/resp.h"
#include "kernel/serve/server.h"

#define E2B_KEEPALIVE_S 5.0    /* a keepalive line after this much silence */
#define E2B_MAX_LINES   100000 /* output lines of one cell sent, then dropped */
#define E2B_MAX_CELLS   16     /* cells of one context waiting or running */
#define E2B_CWD_MAX     1024   /* bytes of a context's cwd */
#define E2B_DEFAULT_CWD "/home/user"
#define E2B_PRE_MAX     (1u << 20) /* bytes kept before the stream opens */

/* Registers e2b_exec's hooks in s->reg, after (and calling) those already
 * there (the bridge's). 0 or -ENOMEM. */
int e2b_hook(struct serve *s);

/* Frees the server's E2B state (after the registry's release). */
void e2b_release(struct serve *s);

/* Makes k a context (cwd NULL: E2B's default), or keeps the one it is.
 * False when out of memory. */
bool e2b_context_attach(struct serve *s, struct serve_kernel *k, const char *cwd);

/* Whether k is a context. */
bool e2b_is_context(const struct serve_kernel *k);

/* k's context as E2B lists it, {"id", "language", "cwd"}, new. */
json_t *e2b_context_json(const struct serve_kernel *k);

/* The default context (made on first use: its kernel may still be starting;
 * cells sent to it wait). 0 with *out borrowed, or an HTTP status with a
 * sentence in err. */
int e2b_default_context(struct serve *s, struct serve_kernel **out, char *err,
                        size_t errlen);

/* Streams code on k (a context, alive) into out: out gets the status, the
 * content type and the stream's opening; env_vars as e2b_env.h. 0, or an
 * HTTP status with a sentence in err (out untouched). */
int e2b_exec_start(struct serve *s, struct serve_kernel *k, const char *code,
                   const json_t *env_vars, struct routes_resp *out, char *err,
                   size_t errlen);

/* Ends every cell of k with an error line (name, value), then their end;
 * with interrupt, the one running is interrupted too: before a restart,
 * which waits for the kernel to answer on its shell. */
void e2b_exec_cut(struct serve_kernel *k, const char *name, const char *value,
                  bool interrupt);

#endif
