/* server: what every part of `sandpit serve` shares. One struct serve per
 * process, reachable from any lws callback through lws_context_user(); its
 * settings from the command line (serve.c), the kernel registry, the lws
 * context and vhost, the counters /metrics shows. The per-connection data
 * lws allocates is a struct serve_pss: an HTTP request's (http.c) or a
 * WebSocket's (bridge.c), each owned by the module that made it. */
#ifndef SANDPIT_SERVE_SERVER_H
#define SANDPIT_SERVE_SERVER_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/serve/auth.h"
#include "kernel/serve/mcp_session.h"
#include "kernel/serve/registry.h"

#define SERVE_MAX_BODY        (1u << 20)  /* bytes of a REST request's body */
#define SERVE_MAX_WS_MESSAGE  (32u << 20) /* bytes of one WebSocket message */
#define SERVE_MAX_WS_QUEUE    (64u << 20) /* bytes waiting for a slow client */
#define SERVE_MAX_PER_ADDRESS 256         /* connections from one address */
#define SERVE_LATENCY_BUCKETS 12
#define SERVE_WS_PING_S       30 /* a quiet WebSocket is pinged after this */
#define SERVE_UPLOADS_AT_ONCE 4  /* bodies past max_body held at once, at most */

struct serve_config {
    const char *ip;
    int port;
    char token[AUTH_TOKEN_MAX + 1];
    char e2b_secret[AUTH_TOKEN_MAX + 1]; /* the /e2b/<secret>/ prefix's */
    const char *certfile, *keyfile;
    const char *allow_origin; /* NULL: CORS closed */
    bool allow_insecure;
    bool log_json;
    size_t max_body, max_ws_message;
    size_t max_upload; /* bytes of a file through E2B's POST and GET /files */
    int max_per_address;
    int ws_ping_s; /* a quiet WebSocket is pinged after this long */
};

struct serve_metrics {
    unsigned long requests, unauthorised, ws_opened, ws_rejected, ws_dropped_msgs;
    unsigned long latency_counts[SERVE_LATENCY_BUCKETS + 1]; /* the last is +Inf */
    double latency_sum;
};

struct serve {
    struct serve_config cfg;
    struct registry reg;
    struct lws_context *ctx;
    struct lws_vhost *vh;
    struct serve_metrics metrics;
    struct msg_session session;     /* the server's own messages (status dead) */
    struct serve_session *sessions; /* sessions.c's */
    struct mcp_sessions mcp;        /* MCP over HTTP's (mcp_session.h) */
    struct e2b *e2b;                /* e2b_exec.c's */
    size_t uploads_held;            /* bytes of the large bodies held at once (http.c) */
};

struct http_req;
struct serve_session;
struct bridge_conn;
struct e2b;

struct serve_pss {
    struct http_req *req;
    struct bridge_conn *conn;
};

/* The server of the lws context the wsi belongs to (borrowed). */
static inline struct serve *serve_of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

#endif
