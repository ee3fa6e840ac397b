/* bridge: a kernel's channels over a WebSocket, /api/kernels/{id}/channels.
 * Each WebSocket client gets DEALER sockets of its own on the kernel's
 * shell, control and stdin (one routing id for shell and stdin, so that an
 * input_request comes back to it), and every iopub message the registry
 * reads; what the client sends is decoded (codec.h), signed with the
 * kernel's key and sent on. The upgrade needs the token and an Origin the
 * server allows, and a kernel that is alive. Several clients may share a
 * kernel; one that comes back with the same session_id gets the iopub it
 * missed (the registry keeps it, bounded). A client that reads too slowly
 * is disconnected rather than queued without end. */
#ifndef SANDPIT_SERVE_BRIDGE_H
#define SANDPIT_SERVE_BRIDGE_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "kernel/serve/server.h"

/* Whether reason is one of the WebSocket side's. */
bool bridge_handles(enum lws_callback_reasons reason);

int bridge_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                    void *in, size_t len);

/* Registers the bridge's hooks in s->reg. */
void bridge_hook(struct serve *s);

#endif
