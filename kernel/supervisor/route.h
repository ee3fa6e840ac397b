/* route: the traffic of running requests between the worker and the clients.
 * Frames from the worker (output, replies, input requests, its hello) are
 * untrusted: each is checked, matched to the request it names, and only then
 * reaches a client; one that is unknown or malformed is counted in
 * kernel.bad_frames, logged and dropped. Input replies from clients go to
 * the request that asked. Frames and messages are borrowed unless a function
 * takes a T **. */
#ifndef SANDPIT_ROUTE_H
#define SANDPIT_ROUTE_H

#include "kernel/link/link.h"
#include "kernel/supervisor/kernel.h"

/* One frame from the worker. */
void route_frame(struct kernel *k, const struct link_frame *f);

/* A message on the stdin channel (an input_reply); *m is taken over. */
void route_stdin(struct kernel *k, struct msg **m);

#endif
