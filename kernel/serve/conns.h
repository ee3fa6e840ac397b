/* conns: the bound on connections from one client address. Each new
 * connection is counted against its peer's address (an entry in a small
 * table, found again through the connection's opaque user data when it
 * closes); past the bound it is closed at once. Debian's libwebsockets has
 * no LWS_WITH_PEER_LIMITS, hence this. */
#ifndef SANDPIT_SERVE_CONNS_H
#define SANDPIT_SERVE_CONNS_H

#include <libwebsockets.h>
#include <stdbool.h>

bool conns_handles(enum lws_callback_reasons reason);

int conns_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                   void *in, size_t len);

#endif
