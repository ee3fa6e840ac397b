/* dispatch: the first step of a client's message in the supervisor. A table
 * maps msg_type to who answers it: a handler of the supervisor's own (between
 * busy and idle) or the worker (through the shells' queues). An unknown
 * request gets an error reply. */
#ifndef SANDPIT_DISPATCH_H
#define SANDPIT_DISPATCH_H

#include "kernel/supervisor/kernel.h"

/* A message from the shell or control channel; *m is taken over (NULL
 * afterwards). */
void dispatch_msg(struct kernel *k, struct msg **m, enum connection_channel ch);

/* A well-signed message whose header could be read but not the rest (as
 * msg_parse leaves it on -EPROTO; *m is taken over, NULL afterwards): a
 * request gets an error reply saying why, between busy and idle. */
void dispatch_unreadable(struct kernel *k, struct msg **m, enum connection_channel ch,
                         const char *why);

#endif
