/* mcp_session: the sessions of MCP over HTTP (mcp_http.c is the transport's
 * HTTP side). Each is a `sandpit mcp` process (mcp_child.h), the same tools
 * as over stdio, and the requests in flight on it: a POST's requests are
 * sent to the child under ids of the session's own (so that no client can
 * confuse two of its calls, or another exchange's), their progress tokens
 * likewise, and what the child answers goes back, under the client's ids,
 * to the POST that asked: an exchange, answered as one JSON body or as an
 * SSE stream of its progress notifications and responses.
 * Ownership: the sessions own their sessions and those their exchanges; a
 * struct mcp_session pointer is borrowed until mcp_session_end. An exchange
 * lives until its stream has ended or its client has gone. */
#ifndef SANDPIT_SERVE_MCP_SESSION_H
#define SANDPIT_SERVE_MCP_SESSION_H

#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/options.h"
#include "kernel/serve/auth.h"
#include "kernel/serve/mcp_child.h"

#define MCP_SESSIONS_MAX   64 /* sessions at once without --max-kernels */
#define MCP_PENDING_MAX    64 /* requests in flight in one session */
#define MCP_SESSION_ID_LEN AUTH_TOKEN_HEX

struct mcp_session;
struct mcp_exchange;
struct http_stream;

struct mcp_sessions {
    struct mcp_session *head;
    struct mcp_exchange *exchanges; /* every exchange, its session's or orphaned */
    int count, max;
    struct mcp_child_set children;
    const struct options *kopts; /* borrowed: the children's kernel options */
    const char *workspace;       /* borrowed */
    const char *private_dir;     /* borrowed: the server's, for their kernels' files */
    double cull_idle_s;          /* 0: never */
    bool cull_busy;
    lws_sorted_usec_list_t cull_timer;
    unsigned long started, ended, culled;
};

/* max 0: MCP_SESSIONS_MAX. Starts the cull timer when cull_idle_s > 0. */
void mcp_sessions_init(struct mcp_sessions *ss, struct lws_context *ctx,
                       struct lws_vhost *vh, const struct options *kopts,
                       const char *workspace, const char *private_dir, int max,
                       double cull_idle_s, bool cull_busy, bool relay_logs);

/* Ends every session and exchange, and waits for the children. */
void mcp_sessions_release(struct mcp_sessions *ss);

/* A new session with its child started. 0 with *out borrowed; 503 at the
 * limit, 500 when the child does not start, with a sentence in err. */
int mcp_session_new(struct mcp_sessions *ss, struct mcp_session **out, char *err,
                    size_t errlen);

/* The session of id, or NULL (ended, or never). */
struct mcp_session *mcp_session_find(struct mcp_sessions *ss, const char *id);

/* Its id (borrowed, MCP_SESSION_ID_LEN visible characters). */
const char *mcp_session_id(const struct mcp_session *s);

/* Ends it: its requests in flight are cancelled (the cell is interrupted)
 * and answered with a JSON-RPC error, its child stopped. *s is set to NULL. */
void mcp_session_end(struct mcp_session **s, const char *why);

/* A notification of the client's, sent on to the child (a cancellation of
 * a request in flight under the child's id, the request answered: with
 * nothing on an SSE stream, an error in a JSON body). 0 or -errno. */
int mcp_session_notify(struct mcp_session *s, json_t *msg);

/* A new exchange of s for the answers to a POST's requests: an SSE stream
 * (sse) or one JSON body, an array for a batch. NULL when out of memory. */
struct mcp_exchange *mcp_exchange_new(struct mcp_session *s, bool sse, bool batch);

/* Sends the request msg (a valid JSON-RPC request, borrowed and changed) to
 * the child as part of ex; a request that cannot go is answered at once in
 * ex with a JSON-RPC error. */
void mcp_exchange_request(struct mcp_exchange *ex, json_t *msg);

/* The stream_open function of a streamed answer (routes_resp), arg the
 * exchange: from here on its answers are written to st. */
void mcp_exchange_open(void *arg, struct http_stream *st);

#endif
