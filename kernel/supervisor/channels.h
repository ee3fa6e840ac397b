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
    struct sign *sign;  /* borrowed; it remembers the signatures it accepted */
    size_t max_message; /* bytes of one message, its frames together; 0: no cap */
    unsigned used;      /* bit 1 << channel: sent on since channels_take_used */
    double welcomes, welcomed_at; /* iopub_welcome's bucket, and when it was filled */
};

/* The channels sent on since the last call (bits 1 << channel), which the
 * event loop must ask for their events before it waits; then none. */
unsigned channels_take_used(struct channels *c);

/* Where drained messages go. */
struct channels_sink {
    void *data;
    /* A verified message from ch (shell, control or stdin), taken over (*m
     * may be left for channels_drain to free). Returns false to stop reading
     * (the kernel is shutting down). */
    bool (*msg)(void *data, enum connection_channel ch, struct msg **m);
    /* A new iopub subscription (its topic, borrowed). */
    void (*subscribed)(void *data, const char *topic, size_t len);
    /* A well-signed message whose header could be read but not the rest (as
     * msg_parse leaves it on -EPROTO; why says what was wrong). The sink may
     * take *m over (setting it to NULL), as in msg. */
    void (*unreadable)(void *data, enum connection_channel ch, struct msg **m,
                       const char *why);
};

/* Opens and binds the sockets that conn names; a message larger than
 * max_message bytes (0: no cap) is dropped unread. 0, or -errno with the
 * reason logged (a port in use is named). channels_close undoes it, also
 * after a failure. */
int channels_open(struct channels *c, const struct connection *conn, struct sign *sign,
                  size_t max_message);
void channels_close(struct channels *c);

/* Reads up to a batch of messages from ch without waiting, and hands each on.
 * A message with too many frames, too many bytes or a bad signature is logged
 * and dropped; a well-signed one whose header is readable but not the rest
 * goes to the sink's unreadable(); the socket is read on. */
void channels_drain(struct channels *c, enum connection_channel ch,
                    const struct channels_sink *sink);

/* Serialises, signs and sends m on ch without waiting (m borrowed): a full
 * pipe drops the message, which is logged. 0 or -errno. */
int channels_send(struct channels *c, enum connection_channel ch, const struct msg *m);

/* Whether the client of routing identity ident is still connected to ch (a
 * ROUTER: shell or control). Asks ZeroMQ by sending it one empty frame, which
 * a client drops unread (it is no message of the protocol): only clients that
 * asked for the question get it (sandpit run's abandon_if_gone). True when
 * ZeroMQ cannot tell. */
bool channels_peer_present(struct channels *c, enum connection_channel ch,
                           const struct wire_frame *ident);

#endif
