/* http: the HTTP side of the server's lws protocol: a request's method,
 * path, token and body gathered within bounds, handed to routes.c, and its
 * answer written back with the headers a JSON API needs (CORS only when
 * --allow-origin allows it). Every request but a CORS preflight needs the
 * token; one without it is answered 401 and counted, never logged. */
#ifndef SANDPIT_SERVE_HTTP_H
#define SANDPIT_SERVE_HTTP_H

#include <libwebsockets.h>
#include <stdbool.h>

/* Whether reason is one of the HTTP side's. */
bool http_handles(enum lws_callback_reasons reason);

/* The callback for those reasons; user is the struct serve_pss. */
int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len);

/* Whether the request on wsi (HTTP or a WebSocket upgrade) presents the
 * server's token. */
bool http_authorised(struct lws *wsi);

#endif
