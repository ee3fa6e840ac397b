/* loop: descriptors that are not lws's own, watched in lws's event loop.
 * Debian's libwebsockets is built without LWS_WITH_EXTERNAL_POLL, so the
 * server cannot own the poll() array; instead each descriptor to watch (a
 * ZeroMQ socket's ZMQ_FD, a kernel's pidfd) is adopted by lws as a raw file
 * (a dup of it, which lws closes when it lets it go), and its callback runs
 * each time it is readable. Ownership: loop_watch returns a new watch that
 * loop_unwatch frees; the descriptor watched stays the caller's. */
#ifndef SANDPIT_SERVE_LOOP_H
#define SANDPIT_SERVE_LOOP_H

#include <libwebsockets.h>

#define LOOP_PROTOCOL "sandpit-fd" /* the protocol the adopted descriptors use */

struct loop_watch;

/* Watches fd for readability; fn(arg) runs each time it is. NULL on failure. */
struct loop_watch *loop_watch(struct lws_vhost *vh, int fd, void (*fn)(void *arg),
                              void *arg);

/* Stops watching (fn is not called again) and frees *w; sets *w to NULL.
 * Accepts NULL. Safe from inside the watch's own callback. */
void loop_unwatch(struct loop_watch **w);

/* The callback of the LOOP_PROTOCOL protocol. */
int loop_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len);

#endif
