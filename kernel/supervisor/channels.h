/* channels: the five ZeroMQ sockets of the connection file, the first and the
 * last step of a client's message in the supervisor: channels_drain reads
 * what a socket holds (recv, msg_parse: wire_split, sign_verify) and hands
 * each message on; channels_send signs and sends without ever waiting. The
 * heartbeat is echoed here and goes no further. The struct owns the context
 * and the sockets; the signing key is borrowed. */
#ifndef SANDPIT_CHANNELS_H
#define SANDPIT_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/connection.h"
#include "protocol/msg.h"
#include "protocol/sign.h"

struct channels {
    void *zctx;
    void *sockets[CONNECTION_NCHANNELS];
    const struct sign *sign;
};

/* Where drained messages go. */
struct channels_sink {
    void *data;
    /* A verified message from ch (shell, control or stdin), taken over (*m
     * may be left for channels_drain to free). Returns false to stop reading
     * (the kernel is shutting down). */
    bool (*msg)(void *data, enum connection_channel ch, struct msg **m);
    /* A new iopub subscription (its topic, borrowed). */
    void (*subscribed)(void *data, const char *topic, size_t len);
};

/* Opens and binds the sockets that conn names. 0, or -errno with the reason
 * logged (a port in use is named). channels_close undoes it, also after a
 * failure. */
int channels_open(struct channels *c, const struct connection *conn,
                  const struct sign *sign);
void channels_close(struct channels *c);

/* Reads up to a batch of messages from ch without waiting, and hands each on.
 * A message with too many frames, bad JSON or a bad signature is logged and
 * dropped; the socket is read on. */
void channels_drain(struct channels *c, enum connection_channel ch,
                    const struct channels_sink *sink);

/* Serialises, signs and sends m on ch without waiting (m borrowed): a full
 * pipe drops the message, which is logged. 0 or -errno. */
int channels_send(struct channels *c, enum connection_channel ch, const struct msg *m);

#endif
