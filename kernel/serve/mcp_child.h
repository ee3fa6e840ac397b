/* mcp_child: one `sandpit mcp` process of the server's, the tools' side of an
 * MCP session over HTTP (mcp_http.c is only its transport). It is started
 * with the server's kernel options and workspace, its stdin and stdout on
 * pipes that the server's loop watches: messages go to it as JSON lines
 * (queued within a bound when it does not read), and each line it writes
 * comes back, bounded, as a JSON value. The child starts and ends its own
 * kernel, and dies with the server (PR_SET_PDEATHSIG).
 * Ownership: a set owns its children. mcp_child_start returns a child
 * borrowed until mcp_child_stop, after which the set ends it (end of input,
 * then signals) and frees it once it has exited; the on_exit hook is the
 * last moment a running child is valid. */
#ifndef SANDPIT_SERVE_MCP_CHILD_H
#define SANDPIT_SERVE_MCP_CHILD_H

#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/options.h"

#define MCP_CHILD_LINE_MAX   (48u << 20) /* bytes of one line from the child */
#define MCP_CHILD_QUEUE_MAX  (8u << 20)  /* bytes waiting for the child to read */
#define MCP_CHILD_STOP_S     10.0        /* after its end of input, before SIGTERM */
#define MCP_CHILD_SHUTDOWN_S 8.0         /* the server's stop: all of them within this */

struct mcp_child;

struct mcp_child_hooks {
    /* Each message the child writes (borrowed for the call). */
    void (*on_message)(void *arg, json_t *msg);
    /* The child has exited (its last lines were given first); it is freed
     * when this returns. */
    void (*on_exit)(void *arg);
    void *arg;
};

struct mcp_child_set {
    struct mcp_child *head;
    int count; /* started and not yet freed, stopping ones included */
    struct lws_context *ctx;
    struct lws_vhost *vh;
    bool relay_logs; /* the children's stderr through the server's log */
};

void mcp_child_set_init(struct mcp_child_set *set, struct lws_context *ctx,
                        struct lws_vhost *vh, bool relay_logs);

/* Ends every child (end of input, then within MCP_CHILD_SHUTDOWN_S signals),
 * waits for them and frees them. No hook is called. */
void mcp_child_set_release(struct mcp_child_set *set);

/* Starts `sandpit mcp --workspace workspace` with the kernel options o
 * (borrowed), its kernel's connection file and log in runtime_dir (the
 * server's private folder, removed with it: what a child killed leaves
 * there goes too; NULL: Jupyter's runtime folder), name naming it in the
 * log. 0 with *out borrowed, or -errno with a sentence in err. */
int mcp_child_start(struct mcp_child_set *set, const struct options *o,
                    const char *workspace, const char *runtime_dir, const char *name,
                    const struct mcp_child_hooks *hooks, struct mcp_child **out,
                    char *err, size_t errlen);

/* Sends msg (borrowed) as one line. 0; -ENOBUFS when the child has not read
 * MCP_CHILD_QUEUE_MAX bytes already; -EPIPE when it has gone or is stopping;
 * -ENOMEM. */
int mcp_child_send(struct mcp_child *c, const json_t *msg);

/* The child's pid (for the log). */
int mcp_child_pid(const struct mcp_child *c);

/* Ends the child: no hook is called again, its input is closed (it finishes,
 * stops its kernel and exits), and a child that lingers is signalled. The
 * set frees it; *c is set to NULL. Accepts NULL. */
void mcp_child_stop(struct mcp_child **c);

#endif
