/* http: requests and answers (http.h).
 *
 * lws parses the request (its header space is bounded by the context's
 * max_http_header_data, its path decoded and stripped of "..") and calls
 * here in steps: the request line and headers, the body in pieces, the end
 * of the body, and "writable" when the answer may go. The body is kept up
 * to the route's bound (routes_body_bound); a Content-Length above it is
 * answered 413 before any of it is read. lws 4.1.6 hands a chunked body on
 * raw, framing and all, and never reports its end (it waits for 100 MiB):
 * chunked.c decodes it here, its last chunk ends the body, a body that
 * grows past the bound is answered 413, and the connection closes after
 * the answer, since lws would read the next request as more of the body. */
#include "kernel/serve/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel/serve/chunked.h"
#include "kernel/serve/metrics.h"
#include "kernel/serve/request.h"
#include "kernel/serve/routes.h"
#include "kernel/serve/server.h"
#include "kernel/serve/stream.h"
#include "kernel/util/monotime.h"

#define HTTP_WRITE_PIECE (256u << 10) /* bytes of an answer's body a writable turn */

struct http_req {
    char method[8];
    char path[512];
    char *body;
    size_t body_len, body_cap, body_bound;
    struct serve *srv;       /* for the large bodies' count (uploads_held) */
    bool upload;             /* a body bound past max_body: counted in uploads_held */
    unsigned char *out;      /* LWS_PRE bytes, then the body to write */
    size_t out_len, out_off; /* out_off: the bytes of it written */
    double started;
    bool awaiting_body; /* lws reports a body's end for a POST without one too */
    bool e2b_prefix;    /* authorised by the E2B secret: E2B's routes only */
    bool chunked;       /* the body comes in chunks (dechunk decodes them) */
    struct chunked dechunk;
    struct lws *wsi;
    /* An answer that waits for a kernel to start, then for a writable turn. */
    struct serve_kernel *pending_kernel;
    void (*finish)(struct serve *s, struct routes_resp *out, struct serve_kernel *k,
                   int status, const char *err, const char *context);
    char context[40];
    struct routes_resp deferred;
    bool has_deferred;
    struct http_stream *stream; /* an answer written over time */
};

bool http_handles(enum lws_callback_reasons reason)
{
    switch (reason) {
    case LWS_CALLBACK_HTTP:
    case LWS_CALLBACK_HTTP_BODY:
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
    case LWS_CALLBACK_HTTP_WRITEABLE:
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        return true;
    default:
        return false;
    }
}

static void req_free(struct serve_pss *pss)
{
    if (!pss || !pss->req)
        return;
    if (pss->req->pending_kernel)
        registry_forget_waiter(pss->req->pending_kernel);
    json_decref(pss->req->deferred.json);
    stream_gone(pss->req->stream);
    if (pss->req->upload)
        pss->req->srv->uploads_held -= pss->req->body_cap;
    free(pss->req->body);
    free(pss->req->out);
    free(pss->req);
    pss->req = NULL;
}

static const char *method_of(struct lws *wsi)
{
    static const struct {
        enum lws_token_indexes tok;
        const char *name;
    } methods[] = {
        {WSI_TOKEN_GET_URI, "GET"},       {WSI_TOKEN_POST_URI, "POST"},
        {WSI_TOKEN_DELETE_URI, "DELETE"}, {WSI_TOKEN_PATCH_URI, "PATCH"},
        {WSI_TOKEN_PUT_URI, "PUT"},       {WSI_TOKEN_OPTIONS_URI, "OPTIONS"},
        {WSI_TOKEN_HEAD_URI, "HEAD"},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (lws_hdr_total_length(wsi, methods[i].tok) > 0)
            return methods[i].name;
    return NULL;
}

bool http_authorised(struct lws *wsi)
{
    struct serve *s = serve_of(wsi);
    char auth[AUTH_TOKEN_MAX + 32] = "", query[AUTH_TOKEN_MAX + 16];
    int alen = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
    bool have_auth =
        alen > 0 && alen < (int)sizeof auth &&
        lws_hdr_copy(wsi, auth, sizeof auth, WSI_TOKEN_HTTP_AUTHORIZATION) > 0;
    const char *q = lws_get_urlarg_by_name(wsi, "token=", query, sizeof query);
    bool ok = auth_request_ok(s->cfg.token, have_auth ? auth : NULL, q);
    lws_explicit_bzero(auth, sizeof auth);
    lws_explicit_bzero(query, sizeof query);
    return ok;
}

static int add_header(struct lws *wsi, const char *name, const char *value,
                      unsigned char **p, unsigned char *end)
{
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name,
                                       (const unsigned char *)value, (int)strlen(value),
                                       p, end);
}

static int add_cors(struct lws *wsi, struct serve *s, unsigned char **p,
                    unsigned char *end)
{
    if (!s->cfg.allow_origin)
        return 0;
    return add_header(wsi, "access-control-allow-origin:", s->cfg.allow_origin, p, end) ||
           add_header(wsi, "access-control-allow-headers:",
                      "Authorization, Content-Type, X-XSRFToken, X-Requested-With, "
                      "Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID",
                      p, end) ||
           add_header(wsi, "access-control-expose-headers:", "Mcp-Session-Id", p, end) ||
           add_header(wsi, "access-control-allow-methods:",
                      "GET, POST, PATCH, DELETE, OPTIONS", p, end);
}

static int add_own(struct lws *wsi, const struct routes_resp *r, unsigned char **p,
                   unsigned char *end)
{
    for (int i = 0; i < r->nheaders; i++)
        if (add_header(wsi, r->headers[i].name, r->headers[i].value, p, end))
            return -1;
    return 0;
}

/* The headers every answer has, after its status and length. */
static int add_common(struct lws *wsi, const struct routes_resp *r, unsigned char **p,
                      unsigned char *end)
{
    return add_header(wsi, "x-content-type-options:", "nosniff", p, end) ||
           add_header(wsi, "cache-control:", "no-store", p, end) ||
           add_header(wsi, "content-security-policy:", "default-src 'none'", p, end) ||
           (r->location[0] && add_header(wsi, "location:", r->location, p, end)) ||
           add_own(wsi, r, p, end) || add_cors(wsi, serve_of(wsi), p, end);
}

/* An answer written over time: its headers now, its body in chunks as the
 * handler writes it (stream.h). */
static int respond_stream(struct lws *wsi, struct serve_pss *pss, struct routes_resp *r)
{
    struct http_req *req = pss->req;
    const char *type = r->content_type ? r->content_type : "application/octet-stream";
    unsigned char hbuf[LWS_PRE + 2048], *start = hbuf + LWS_PRE, *p = start,
                                        *end = hbuf + sizeof hbuf - 1;
    json_decref(r->json);
    free(r->text);
    if (!(req->stream = stream_new(wsi)))
        return -1;
    int rc = lws_add_http_header_status(wsi, (unsigned int)r->status, &p, end) ||
                     add_header(wsi, "content-type:", type, &p, end) ||
                     add_header(wsi, "transfer-encoding:", "chunked", &p, end) ||
                     add_common(wsi, r, &p, end) ||
                     (req->chunked && add_header(wsi, "connection:", "close", &p, end)) ||
                     lws_finalize_write_http_header(wsi, start, &p, end)
                 ? -1
                 : 0;
    metrics_observe(serve_of(wsi), monotime_now() - req->started);
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0); /* the handler bounds its answer */
    /* The handler is given its stream even when the headers could not go:
     * the connection then closes, and it learns so as it would of a client
     * that went, rather than keeping what it made for the answer. */
    if (rc)
        stream_refuse(req->stream);
    r->stream_open(r->stream_arg, req->stream);
    return rc;
}

/* The answer has gone: the connection waits for the next request, or closes
 * after a chunked body (lws would take what follows for more of it). */
static int completed(struct lws *wsi, struct serve_pss *pss)
{
    bool close_now = pss->req && pss->req->chunked;
    req_free(pss);
    return close_now || lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Writes the answer's headers, and keeps its body for the writable turn. */
static int respond(struct lws *wsi, struct serve_pss *pss, struct routes_resp *r)
{
    if (r->stream_open)
        return respond_stream(wsi, pss, r);
    struct http_req *req = pss->req;
    const unsigned char *data = r->raw;
    size_t len = r->raw_len;
    char *json = NULL;
    if (r->json && !(json = json_dumps(r->json, JSON_COMPACT)))
        r->status = 500;
    if (json) {
        data = (const unsigned char *)json;
        len = strlen(json);
    } else if (r->text) {
        data = (const unsigned char *)r->text;
        len = strlen(r->text);
    }
    const char *type = r->content_type ? r->content_type : "application/json";
    if (r->status == 204)
        len = 0;
    unsigned char hbuf[LWS_PRE + 2048], *start = hbuf + LWS_PRE, *p = start,
                                        *end = hbuf + sizeof hbuf - 1;
    int rc = 0;
    if (lws_add_http_common_headers(wsi, (unsigned int)r->status, type, len, &p, end) ||
        add_common(wsi, r, &p, end) ||
        (req->chunked && add_header(wsi, "connection:", "close", &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        rc = -1;
    if (!rc && len && strcmp(req->method, "HEAD") != 0) {
        if (r->owned_pre && data == (unsigned char *)r->owned + LWS_PRE) {
            req->out = r->owned; /* a large file, not copied again */
            r->owned = NULL;
            req->out_len = len;
            lws_callback_on_writable(wsi);
        } else if (!(req->out = malloc(LWS_PRE + len))) {
            rc = -1;
        } else {
            memcpy(req->out + LWS_PRE, data, len);
            req->out_len = len;
            lws_callback_on_writable(wsi);
        }
    }
    metrics_observe(serve_of(wsi), monotime_now() - req->started);
    free(json);
    free(r->text);
    free(r->owned);
    json_decref(r->json);
    if (rc)
        return -1;
    if (!req->out_len)
        return completed(wsi, pss);
    return 0;
}

static int answer_error(struct lws *wsi, struct serve_pss *pss, int status,
                        const char *message)
{
    struct routes_resp r = {0};
    routes_error(&r, status, message);
    return respond(wsi, pss, &r);
}

/* A kernel this request waited for has started, or not. */
static void on_started(void *arg, struct serve_kernel *k, int status, const char *err)
{
    struct http_req *req = arg;
    req->pending_kernel = NULL;
    memset(&req->deferred, 0, sizeof req->deferred);
    req->finish(serve_of(req->wsi), &req->deferred, k, status, err, req->context);
    req->has_deferred = true;
    lws_callback_on_writable(req->wsi);
}

static int handle(struct lws *wsi, struct serve_pss *pss)
{
    struct routes_resp r = {.defer_fn = on_started, .defer_arg = pss->req};
    struct http_req *req = pss->req;
    req->wsi = wsi;
    if (strcmp(req->method, "OPTIONS") == 0) {
        r.status = 204;
        return respond(wsi, pss, &r);
    }
    struct serve_request rq = {
        .method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method,
        .path = req->path,
        .body = req->body ? req->body : "",
        .len = req->body_len,
        .wsi = wsi,
        .e2b_prefix = req->e2b_prefix,
    };
    routes_handle(serve_of(wsi), &rq, &r);
    if (r.pending) {
        req->pending_kernel = r.pending_kernel;
        req->finish = r.finish;
        memcpy(req->context, r.context, sizeof req->context);
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0); /* the start has its own bound */
        return 0;
    }
    return respond(wsi, pss, &r);
}

static bool has_body(struct lws *wsi, const char *method)
{
    if (strcmp(method, "POST") && strcmp(method, "PATCH") && strcmp(method, "PUT"))
        return false;
    char te[32] = "";
    if (lws_hdr_copy(wsi, te, sizeof te, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    char cl[32] = "";
    return lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 &&
           strtoull(cl, NULL, 10) > 0;
}

/* A body comes: with Content-Length (lws counts it), or chunked (decoded
 * here); any other transfer coding is refused. */
static int expect_body(struct lws *wsi, struct serve_pss *pss)
{
    char te[64] = "";
    int n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING);
    if (n > 0) {
        pss->req->chunked = true; /* whatever it says, lws took no length */
        if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0)
            return answer_error(wsi, pss, 400,
                                "Transfer-Encoding and Content-Length: send one");
        if (n >= (int)sizeof te ||
            lws_hdr_copy(wsi, te, sizeof te, WSI_TOKEN_HTTP_TRANSFER_ENCODING) != n ||
            strcasecmp(te, "chunked") != 0)
            return answer_error(wsi, pss, 501,
                                "the body's transfer coding must be chunked, alone");
        chunked_init(&pss->req->dechunk);
    }
    pss->req->awaiting_body = true;
    return 0; /* the body comes */
}

static int begin(struct lws *wsi, struct serve_pss *pss, const char *path)
{
    struct serve *s = serve_of(wsi);
    req_free(pss);
    const char *method = method_of(wsi);
    if (!(pss->req = calloc(1, sizeof *pss->req)))
        return -1;
    pss->req->started = monotime_now();
    snprintf(pss->req->method, sizeof pss->req->method, "%s", method ? method : "");
    if (!method)
        return answer_error(wsi, pss, 405, "method not allowed");
    if (strlen(path) >= sizeof pss->req->path)
        return answer_error(wsi, pss, 414, "the path is too long");
    const char *rest = NULL;
    int e2b = auth_e2b_path(s->cfg.e2b_secret, path, &rest);
    pss->req->e2b_prefix = e2b > 0;
    snprintf(pss->req->path, sizeof pss->req->path, "%s",
             e2b <= 0 ? path
             : *rest  ? rest
                      : "/");
    if (e2b < 0 || (!e2b && strcmp(method, "OPTIONS") != 0 && !http_authorised(wsi))) {
        s->metrics.unauthorised++;
        return answer_error(wsi, pss, 401, "a valid token is required");
    }
    pss->req->body_bound = routes_body_bound(s, method, pss->req->path);
    pss->req->srv = s;
    pss->req->upload = pss->req->body_bound > s->cfg.max_body;
    char cl[32] = "";
    if (lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 &&
        strtoull(cl, NULL, 10) > pss->req->body_bound)
        return answer_error(wsi, pss, 413, "the body is too large");
    if (has_body(wsi, method))
        return expect_body(wsi, pss);
    return handle(wsi, pss);
}

/* Room for len more bytes of the body: the buffer grows by doubling, so that
 * a large upload is not copied once a piece, but never past the route's
 * bound (and the piece at hand). The large bodies together are held to
 * SERVE_UPLOADS_AT_ONCE of them. 0, -ENOMEM, or -ENOBUFS past that. */
static int body_keep(struct http_req *req, size_t len)
{
    size_t need = req->body_len + len + 1;
    if (need <= req->body_cap)
        return 0;
    size_t cap = req->body_cap ? req->body_cap : 4096;
    while (cap < need)
        cap *= 2;
    size_t most = req->body_bound + 1 > need ? req->body_bound + 1 : need;
    if (cap > most)
        cap = most;
    size_t *held = &req->srv->uploads_held;
    if (req->upload &&
        *held - req->body_cap + cap > SERVE_UPLOADS_AT_ONCE * (req->body_bound + 1))
        return -ENOBUFS;
    char *b = realloc(req->body, cap);
    if (!b)
        return -ENOMEM;
    if (req->upload)
        *held += cap - req->body_cap;
    req->body = b;
    req->body_cap = cap;
    return 0;
}

/* The answer when body_keep refuses. */
static int body_refused(struct lws *wsi, struct serve_pss *pss, int rc)
{
    pss->req->awaiting_body = false;
    if (rc != -ENOBUFS)
        return -1;
    return answer_error(wsi, pss, 503,
                        "the server holds as many uploads as it may at once: try again "
                        "once one has ended");
}

/* A piece of a chunked body: its data kept, the body handled at its end. */
static int body_chunk(struct lws *wsi, struct serve_pss *pss, const void *in, size_t len)
{
    struct http_req *req = pss->req;
    size_t room = req->body_bound - req->body_len, got = 0, used;
    int kept = body_keep(req, len); /* the data is never longer than its framing */
    if (kept)
        return body_refused(wsi, pss, kept);
    int rc =
        chunked_decode(&req->dechunk, in, len, req->body + req->body_len, &got, &used);
    if (!rc && got > room) {
        req->awaiting_body = false;
        return answer_error(wsi, pss, 413, "the body is too large");
    }
    req->body_len += got;
    req->body[req->body_len] = 0;
    if (rc || chunked_done(&req->dechunk)) {
        req->awaiting_body = false;
        return rc ? answer_error(wsi, pss, 400, req->dechunk.error) : handle(wsi, pss);
    }
    return 0;
}

static int body_part(struct lws *wsi, struct serve_pss *pss, const void *in, size_t len)
{
    struct http_req *req = pss->req;
    if (!req || !req->awaiting_body)
        return req ? 0 : -1;
    if (req->chunked)
        return body_chunk(wsi, pss, in, len);
    if (len > req->body_bound || req->body_len + len > req->body_bound)
        return -1;
    int kept = body_keep(req, len);
    if (kept)
        return body_refused(wsi, pss, kept);
    memcpy(req->body + req->body_len, in, len);
    req->body_len += len;
    req->body[req->body_len] = 0;
    return 0;
}

/* A piece of the answer's body, on a writable turn: a large one (a file)
 * goes a piece at a time, so that lws never holds a copy of it all. The
 * LWS_PRE bytes before a later piece are bytes already sent, which lws may
 * use. */
static int write_piece(struct lws *wsi, struct serve_pss *pss)
{
    struct http_req *req = pss->req;
    size_t n = req->out_len - req->out_off;
    if (n > HTTP_WRITE_PIECE)
        n = HTTP_WRITE_PIECE;
    bool last = req->out_off + n == req->out_len;
    if (lws_write(wsi, req->out + LWS_PRE + req->out_off, n,
                  last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < 0) {
        req_free(pss);
        return -1;
    }
    req->out_off += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    return completed(wsi, pss);
}

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    struct serve_pss *pss = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return begin(wsi, pss, in ? (const char *)in : "/");
    case LWS_CALLBACK_HTTP_BODY:
        return body_part(wsi, pss, in, len);
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (!pss->req || !pss->req->awaiting_body)
            return 0; /* answered already */
        pss->req->awaiting_body = false;
        if (pss->req->chunked) /* lws's own bound on a body of no length */
            return answer_error(wsi, pss, 413, "a chunked body may be at most 100 MiB");
        return handle(wsi, pss);
    case LWS_CALLBACK_HTTP_WRITEABLE: {
        struct http_req *req = pss ? pss->req : NULL;
        if (req && req->has_deferred) {
            struct routes_resp r = req->deferred;
            memset(&req->deferred, 0, sizeof req->deferred);
            req->has_deferred = false;
            return respond(wsi, pss, &r);
        }
        if (req && req->stream) {
            int finished;
            if (stream_writable(req->stream, &finished))
                return -1;
            if (!finished)
                return 0;
            return completed(wsi, pss);
        }
        if (!req || !req->out)
            return 0;
        return write_piece(wsi, pss);
    }
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        req_free(pss);
        return 0;
    default:
        return 0;
    }
}
