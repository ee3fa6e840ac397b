/* mcp_http: /mcp (mcp_http.h).
 *
 * Everything a client sends is checked before any of it reaches a session:
 * the headers first (a browser page of another site is refused by its
 * Origin, so that a page cannot drive a local server; a protocol version
 * the server does not speak is refused before it is misread), then the
 * body, which must be JSON-RPC 2.0 through and through: a batch (2025-03-26
 * allows them) is bounded, initialize goes alone, and each id is a string
 * or an integer. Errors are JSON-RPC error objects, as MCP clients read
 * them, with the HTTP status the specification asks for. */
#include "kernel/serve/mcp_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel/client/jsonrpc.h"
#include "kernel/serve/auth.h"
#include "kernel/serve/mcp_session.h"
#include "kernel/serve/server.h"

#define MCP_BATCH_MAX    64
#define MCP_SERVER_ERROR -32000
#define HEADER_MAX       1024

static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

enum kind { KIND_BAD, KIND_REQUEST, KIND_NOTIFICATION, KIND_RESPONSE };

static void rpc_error(struct routes_resp *out, int status, int code, const char *text)
{
    json_decref(out->json);
    out->json = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error",
                          "code", code, "message", text);
    out->status = out->json ? status : 500;
}

static bool contains_word(const char *hay, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, word, n) == 0)
            return true;
    return false;
}

/* The Origin and the protocol version, for every method. */
static bool headers_ok(struct serve *s, const struct serve_request *rq,
                       struct routes_resp *out)
{
    char origin[HEADER_MAX], host[HEADER_MAX], version[64];
    int o = serve_request_header(rq, "origin:", origin, sizeof origin);
    int h = serve_request_header(rq, "host:", host, sizeof host);
    if (o < 0 ||
        (o > 0 && !auth_origin_ok(origin, h > 0 ? host : NULL, s->cfg.allow_origin))) {
        rpc_error(out, 403, MCP_SERVER_ERROR, "this Origin is not allowed");
        return false;
    }
    int v = serve_request_header(rq, "mcp-protocol-version:", version, sizeof version);
    bool known = false;
    for (size_t i = 0; v > 0 && i < sizeof versions / sizeof *versions; i++)
        known = known || strcmp(version, versions[i]) == 0;
    if (v != 0 && !known) {
        char text[200];
        snprintf(text, sizeof text,
                 "unsupported MCP-Protocol-Version \"%.40s\": this server speaks %s, %s "
                 "and %s",
                 v > 0 ? version : "(too long)", versions[0], versions[1], versions[2]);
        rpc_error(out, 400, MCP_SERVER_ERROR, text);
        return false;
    }
    return true;
}

/* A POST's Accept and Content-Type: which answers the client takes. */
static bool post_headers_ok(const struct serve_request *rq, bool *json_ok, bool *sse_ok,
                            struct routes_resp *out)
{
    char accept[HEADER_MAX], type[HEADER_MAX];
    int a = serve_request_header(rq, "accept:", accept, sizeof accept);
    *sse_ok = a > 0 && contains_word(accept, "text/event-stream");
    *json_ok = a <= 0 || contains_word(accept, "application/json") ||
               contains_word(accept, "*/*") || contains_word(accept, "application/*");
    if (!*json_ok && !*sse_ok) {
        rpc_error(out, 406, MCP_SERVER_ERROR,
                  "the client must accept application/json or text/event-stream");
        return false;
    }
    int t = serve_request_header(rq, "content-type:", type, sizeof type);
    if (t != 0 && (t < 0 || strncasecmp(type, "application/json", 16) != 0 ||
                   (type[16] && type[16] != ';' && type[16] != ' '))) {
        rpc_error(out, 415, MCP_SERVER_ERROR, "the body must be application/json");
        return false;
    }
    return true;
}

static enum kind kind_of(const json_t *m)
{
    const char *v = json_string_value(json_object_get(m, "jsonrpc"));
    if (!json_is_object(m) || !v || strcmp(v, "2.0") != 0)
        return KIND_BAD;
    const json_t *method = json_object_get(m, "method");
    const json_t *id = json_object_get(m, "id");
    if (method) {
        if (!json_is_string(method))
            return KIND_BAD;
        if (!id)
            return KIND_NOTIFICATION;
        return json_is_string(id) || json_is_integer(id) ? KIND_REQUEST : KIND_BAD;
    }
    bool answer = json_object_get(m, "result") || json_object_get(m, "error");
    return id && answer ? KIND_RESPONSE : KIND_BAD;
}

struct post_summary {
    size_t n, requests;
    bool batch, initialize, tools_call;
};

/* Checks every message of body; false (answered) for a bad one. */
static bool summarise(json_t *body, struct post_summary *ps, struct routes_resp *out)
{
    memset(ps, 0, sizeof *ps);
    ps->batch = json_is_array(body);
    ps->n = ps->batch ? json_array_size(body) : 1;
    if (ps->batch && (ps->n == 0 || ps->n > MCP_BATCH_MAX)) {
        rpc_error(out, 400, JSONRPC_INVALID_REQUEST,
                  ps->n ? "a batch holds at most 64 messages" : "an empty batch");
        return false;
    }
    for (size_t i = 0; i < ps->n; i++) {
        json_t *m = ps->batch ? json_array_get(body, i) : body;
        enum kind k = kind_of(m);
        const char *method = json_string_value(json_object_get(m, "method"));
        if (k == KIND_BAD) {
            rpc_error(out, 400, JSONRPC_INVALID_REQUEST,
                      "not a JSON-RPC 2.0 message (a request's id is a string or an "
                      "integer)");
            return false;
        }
        if (k == KIND_REQUEST) {
            ps->requests++;
            ps->initialize = ps->initialize || strcmp(method, "initialize") == 0;
            ps->tools_call = ps->tools_call || strcmp(method, "tools/call") == 0;
        }
    }
    if (ps->initialize && ps->n > 1) {
        rpc_error(out, 400, JSONRPC_INVALID_REQUEST,
                  "initialize goes alone, not in a batch");
        return false;
    }
    return true;
}

/* The session a request names: found, or answered 400 (none named) or 404. */
static struct mcp_session *session_of(struct serve *s, const struct serve_request *rq,
                                      struct routes_resp *out)
{
    char id[MCP_SESSION_ID_LEN + 2];
    int h = serve_request_header(rq, "mcp-session-id:", id, sizeof id);
    struct mcp_session *sess = h > 0 ? mcp_session_find(&s->mcp, id) : NULL;
    if (h == 0)
        rpc_error(out, 400, MCP_SERVER_ERROR,
                  "Mcp-Session-Id is required: initialize first to get one");
    else if (!sess)
        rpc_error(out, 404, MCP_SERVER_ERROR, "no such MCP session: it has ended");
    return sess;
}

/* The session of a POST: a new one for initialize, else the one it names. */
static struct mcp_session *post_session(struct serve *s, const struct serve_request *rq,
                                        const struct post_summary *ps,
                                        struct routes_resp *out)
{
    if (!ps->initialize)
        return session_of(s, rq, out);
    char id[8], err[1200];
    if (serve_request_header(rq, "mcp-session-id:", id, sizeof id) != 0) {
        rpc_error(out, 400, JSONRPC_INVALID_REQUEST,
                  "initialize starts a session: send it without Mcp-Session-Id");
        return NULL;
    }
    struct mcp_session *sess = NULL;
    int status = mcp_session_new(&s->mcp, &sess, err, sizeof err);
    if (status)
        rpc_error(out, status, MCP_SERVER_ERROR, err);
    return sess;
}

/* Sends the messages on: requests in ex (NULL when there are none). */
static void forward(struct mcp_session *sess, json_t *body, const struct post_summary *ps,
                    struct mcp_exchange *ex)
{
    for (size_t i = 0; i < ps->n; i++) {
        json_t *m = ps->batch ? json_array_get(body, i) : body;
        enum kind k = kind_of(m);
        if (k == KIND_REQUEST && ex)
            mcp_exchange_request(ex, m);
        else if (k == KIND_NOTIFICATION)
            mcp_session_notify(sess, m);
        /* a response: the server sends no requests, so nothing waits for one */
    }
}

static void post(struct serve *s, const struct serve_request *rq, struct routes_resp *out)
{
    bool json_ok, sse_ok;
    if (!post_headers_ok(rq, &json_ok, &sse_ok, out))
        return;
    json_error_t e;
    json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_DECODE_ANY, &e);
    struct post_summary ps;
    if (!body) {
        rpc_error(out, 400, JSONRPC_PARSE_ERROR, "the body is not JSON");
        return;
    }
    struct mcp_session *sess = NULL;
    if (!summarise(body, &ps, out) || !(sess = post_session(s, rq, &ps, out)))
        goto out;
    if (!ps.requests) {
        forward(sess, body, &ps, NULL);
        out->status = 202;
        goto out;
    }
    bool sse = sse_ok && (!json_ok || ps.tools_call);
    struct mcp_exchange *ex = mcp_exchange_new(sess, sse, ps.batch);
    if (!ex) {
        if (ps.initialize)
            mcp_session_end(&sess, "out of memory");
        rpc_error(out, 500, JSONRPC_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    forward(sess, body, &ps, ex);
    out->status = 200;
    out->content_type = sse ? "text/event-stream" : "application/json";
    out->stream_open = mcp_exchange_open;
    out->stream_arg = ex;
    if (sse)
        resp_header_add(out, "cache-control:", "no-cache");
    if (ps.initialize)
        resp_header_add(out, "mcp-session-id:", mcp_session_id(sess));
out:
    json_decref(body);
}

void mcp_http_handle(struct serve *s, const struct serve_request *rq,
                     struct routes_resp *out)
{
    if (!headers_ok(s, rq, out))
        return;
    if (strcmp(rq->method, "POST") == 0) {
        post(s, rq, out);
    } else if (strcmp(rq->method, "DELETE") == 0) {
        struct mcp_session *sess = session_of(s, rq, out);
        if (sess) {
            mcp_session_end(&sess, "the client ended it");
            out->status = 204;
        }
    } else {
        rpc_error(out, 405, MCP_SERVER_ERROR,
                  strcmp(rq->method, "GET") == 0
                      ? "this server offers no stream of its own at GET: it sends no "
                        "requests, and a call's progress comes on the call's own stream"
                      : "method not allowed");
        resp_header_add(out, "allow:", "POST, DELETE");
    }
}
