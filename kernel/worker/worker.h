/* worker: `sandpit worker`, the process that runs the user's code.
 * Started by the supervisor with the link on fd 3 (see child.h). It confines
 * itself (sandbox/), initialises CPython (pyrt), captures fds 1 and 2 (pump)
 * and serves requests until the link closes. The functions below are the
 * worker's two ends of the link, usable from any of its threads. */
#ifndef SANDPIT_WORKER_H
#define SANDPIT_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/link/link.h"

#define WORKER_LINK_FD 3

/* The worker's main(); argv[0] is "worker". Returns the exit status. */
int worker_main(int argc, char **argv);

/* Sends one frame to the supervisor (buffers borrowed). Thread-safe; blocks
 * while the link is full. 0 or -errno. */
int worker_send(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers);

/* Takes the next frame from the supervisor into *out (caller releases).
 * Thread-safe. With block false it returns at once. Returns 1 (a frame),
 * 0 (block false and nothing there), -EPIPE (the link is closed), -EINTR (a
 * signal arrived while waiting: the caller runs its handlers and may retry),
 * or -errno. */
int worker_recv(struct link_frame *out, bool block);

#endif
