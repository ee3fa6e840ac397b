/* zwire: one Jupyter message off or onto a ZeroMQ socket of the server's,
 * without waiting: what the bridge and the kernel registry read from a
 * kernel's sockets (verified and parsed by protocol/msg.c, never trusted
 * otherwise) and write to them. ZMQ_FD only says that something may have
 * changed, so a reader drains the socket while zwire_readable says so, and
 * after every send too (a send may take the signal that a message came). */
#ifndef SANDPIT_SERVE_ZWIRE_H
#define SANDPIT_SERVE_ZWIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/msg.h"
#include "protocol/sign.h"

/* True when a message can be read from sock now (ZMQ_EVENTS has ZMQ_POLLIN). */
bool zwire_readable(void *sock);

/* The socket's ZMQ_FD, or -1. */
int zwire_fd(void *sock);

/* Reads one message if one is there: 0 with *out new (caller frees) and
 * *bytes (may be NULL) the size of its frames, -EAGAIN when none is,
 * -EBADMSG when one was read and did not parse or verify (dropped), or
 * -errno. */
int zwire_recv(void *sock, struct sign *s, struct msg **out, size_t *bytes);

/* Signs and sends m without waiting (its identities first, if any). 0,
 * -EAGAIN when the socket's queue is full (nothing sent), or -errno. */
int zwire_send(void *sock, const struct sign *s, const struct msg *m);

#endif
