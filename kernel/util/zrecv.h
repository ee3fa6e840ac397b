/* zrecv: one multipart message read from a ZeroMQ socket, the step before
 * msg_parse (protocol/ has no sockets). Both ends of sandpit read with it: the
 * supervisor's channels and the client. Nothing of a message is copied: its
 * frames borrow the parts as ZeroMQ received them, until zrecv_release. */
#ifndef SANDPIT_ZRECV_H
#define SANDPIT_ZRECV_H

#include <stddef.h>

#include "protocol/wire.h"

#define ZRECV_MAX_FRAMES 1024 /* frames in one message; more is refused */

/* A message as received: frames[i] borrows parts' i-th (zmq_msg_t, ZeroMQ's
 * own; void * here so that this header needs no zmq.h). */
struct zrecv {
    void *parts;
    struct wire_frame *frames;
    size_t n;
};

/* Reads one multipart message from socket without waiting for its first part.
 * Returns the number of frames (> 0) with r filled (the caller releases it),
 * -EAGAIN when no message is there, -EMSGSIZE when it had more than
 * ZRECV_MAX_FRAMES frames or more than max_bytes bytes (0: no limit) (it was
 * read to its end and discarded: nothing past the limit is kept), or -errno.
 * r is empty on every failure. */
int zrecv_read(void *socket, size_t max_bytes, struct zrecv *r);

/* Gives the parts back to ZeroMQ; r is empty afterwards. */
void zrecv_release(struct zrecv *r);

#endif
