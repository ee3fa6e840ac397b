/* codec: a Jupyter message as a WebSocket message, both ways, in the two
 * forms jupyter_server speaks. The legacy protocol (no subprotocol): a JSON
 * text frame with a "channel" member, or, when the message has buffers, a
 * binary frame of u32 big-endian offsets (the count first) before that JSON
 * and the buffers. The v1.kernel.websocket.jupyter.org subprotocol: a
 * binary frame of u64 little-endian offsets, then the channel's name, the
 * four JSON parts and the buffers. Everything decoded comes from a network
 * client: every offset is checked against the frame before it is used.
 * Pure: no sockets, no lws; what it returns is new (caller frees). */
#ifndef SANDPIT_SERVE_CODEC_H
#define SANDPIT_SERVE_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/connection.h"
#include "protocol/msg.h"

enum codec_proto { CODEC_LEGACY, CODEC_V1 };

#define CODEC_V1_NAME "v1.kernel.websocket.jupyter.org"

/* The channel of a name ("shell", "iopub", "stdin", "control"; "hb" is not
 * one a client may use), or -1. */
int codec_channel(const char *name);

/* Encodes m, received on channel, for a client speaking p. *out is new
 * (caller frees): pre bytes of room (for lws's LWS_PRE), then the message's
 * *len bytes; *binary says which kind of frame it is. 0 or -ENOMEM. */
int codec_encode(const struct msg *m, const char *channel, enum codec_proto p, size_t pre,
                 unsigned char **out, size_t *len, bool *binary);

/* Decodes one whole WebSocket message from a client speaking p. On success
 * *out is a new msg (header, parent_header, metadata, content, buffers; no
 * identities) and *channel the channel it goes to. 0, or -EBADMSG (or
 * -ENOMEM) with a sentence in err. */
int codec_decode(const unsigned char *data, size_t len, bool binary, enum codec_proto p,
                 enum connection_channel *channel, struct msg **out, char *err,
                 size_t errlen);

#endif
