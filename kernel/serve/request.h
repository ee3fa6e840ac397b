/* request: what a REST handler is given of a request (http.c makes it): the
 * method, the decoded path without its query, the body gathered within its
 * bound, and the connection, through which a handler reads a header or a
 * query argument by name. Everything in it is borrowed for the call; the
 * body is NUL-terminated but may hold NULs of its own (len says). */
#ifndef SANDPIT_SERVE_REQUEST_H
#define SANDPIT_SERVE_REQUEST_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

struct serve_request {
    const char *method; /* "GET" for a HEAD */
    const char *path;
    const char *body; /* "" when there is none */
    size_t len;
    struct lws *wsi;
    bool e2b_prefix; /* it came under /e2b/<secret>/ (stripped): E2B's routes only */
};

/* The value of header name (lower case, with its colon: "content-type:")
 * into buf, NUL-terminated: 1; 0 when it is absent or empty; -1 when it is
 * longer than len - 1 bytes (a value cut short is never handed on, and a
 * value too long is not taken for one absent: buf is then ""). */
int serve_request_header(const struct serve_request *rq, const char *name, char *buf,
                         size_t len);

/* The value of the query argument name (with its '=': "path=") into buf,
 * URL-decoded and NUL-terminated. False when it is absent or too long. */
bool serve_request_query(const struct serve_request *rq, const char *name, char *buf,
                         size_t len);

#endif
