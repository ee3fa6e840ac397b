/* relay: a kernel's own log lines (its stderr) through the server's log,
 * for --log-format json: each line becomes a JSON line of the server's,
 * with the kernel's id and user. The kernel's stderr is a pipe whose read
 * end the loop watches; its write end stays open for the kernel's life (a
 * kernel started again is given it again, by its /proc/self/fd path).
 * Ownership: relay_new returns a new relay; relay_free ends it. */
#ifndef SANDPIT_SERVE_RELAY_H
#define SANDPIT_SERVE_RELAY_H

#include <libwebsockets.h>
#include <stddef.h>

#define RELAY_LINE_MAX 4096 /* a longer line is cut into pieces */

struct relay;

/* A relay for the kernel id of user (may be ""); the path its stderr is to
 * be opened from, into path (len bytes). NULL on failure. */
struct relay *relay_new(struct lws_vhost *vh, const char *id, const char *user,
                        char *path, size_t len);

void relay_free(struct relay *r);

#endif
