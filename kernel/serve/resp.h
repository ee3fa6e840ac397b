/* resp: what a REST handler answers (routes.c, sessions.c), for http.c to
 * write: a status and a body, JSON (new, http.c frees it) or bytes, or a
 * body written over time (stream.h), with at most RESP_MAX_HEADERS headers
 * of the handler's own. */
#ifndef SANDPIT_SERVE_RESP_H
#define SANDPIT_SERVE_RESP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct serve;
struct serve_kernel;
struct http_stream;

#define RESP_MAX_HEADERS 4

struct resp_header {
    const char *name; /* lower case, with its colon: "mcp-session-id:" (static) */
    char value[160];
};

struct routes_resp {
    int status;
    json_t *json;             /* the body, or NULL */
    const unsigned char *raw; /* or raw bytes (borrowed, static, or in owned) */
    void *owned;              /* what raw points into, if anything (new) */
    bool owned_pre;           /* raw is owned + LWS_PRE: http.c writes it in place */
    char *text;               /* or a text body (new) */
    size_t raw_len;
    const char *content_type;
    char location[160];
    struct resp_header headers[RESP_MAX_HEADERS];
    int nheaders;
    /* A body written over time: stream_open(stream_arg, st) once the headers
     * have gone (status and content_type set, no body). */
    void (*stream_open)(void *arg, struct http_stream *st);
    void *stream_arg;
    /* Set by http.c: how an answer that must wait (a kernel that starts)
     * reaches it later. A handler that defers sets pending, and
     * pending_kernel to the kernel whose start it waits for. */
    void (*defer_fn)(void *arg, struct serve_kernel *k, int status, const char *err);
    void *defer_arg;
    bool pending;
    struct serve_kernel *pending_kernel;
    /* ... and what makes the answer then, with context (a session's id). */
    void (*finish)(struct serve *s, struct routes_resp *out, struct serve_kernel *k,
                   int status, const char *err, const char *context);
    char context[40];
};

/* The body as a JSON object (an empty body is {}): new; NULL with a 400 in
 * out when it is not one. */
json_t *resp_body_object(const char *body, size_t len, struct routes_resp *out);

/* out answers status with json (new; NULL, out of memory: a 500). */
void resp_json(struct routes_resp *out, int status, json_t *json);

/* Splits path into at most max segments (in buf, len bytes); one trailing
 * slash is allowed, as tornado's routes allow it. The count, or -1 for a
 * path with more, an empty segment, "." or "..". */
int resp_split_path(const char *path, char *buf, size_t len, char **seg, int max);

/* out becomes the error status with message ({"reason", "message"}). */
void routes_error(struct routes_resp *out, int status, const char *message);

/* Adds header name (static, as resp_header says) with value; false when
 * there is no room or the value is too long or not printable ASCII. */
bool resp_header_add(struct routes_resp *out, const char *name, const char *value);

#endif
