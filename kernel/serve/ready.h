/* ready: the handshake that says a kernel just started can take cells,
 * without waiting: kernel_info_request on shell, sent again until both its
 * reply and an iopub message parented to one of them have come (the kernel
 * may not have bound its sockets yet, and a SUB socket misses what comes
 * before its subscription reaches the kernel), then an empty silent cell,
 * whose reply proves that a worker runs (kernel_info is the supervisor's
 * alone). The same steps as launch_wait_ready, driven by the server's loop
 * rather than a wait. */
#ifndef SANDPIT_SERVE_READY_H
#define SANDPIT_SERVE_READY_H

#include <stdbool.h>

#include "kernel/client/client.h"

#define READY_MAX_INFO 32 /* kernel_info_requests remembered */

struct ready {
    char info_ids[READY_MAX_INFO][CLIENT_ID_LEN];
    int ninfo;
    bool got_reply, got_iopub, executing;
    char exec_id[CLIENT_ID_LEN];
};

void ready_init(struct ready *r);

/* Whether the kernel_info step is still under way (the next poke resends). */
bool ready_waiting_info(const struct ready *r);

/* Sends a kernel_info_request (again). 0 or -errno. */
int ready_poke(struct ready *r, struct client *c);

/* A message m from c's channel ch: 1 when the kernel is ready, 0 while not
 * yet, -errno when the handshake cannot go on. */
int ready_on_msg(struct ready *r, struct client *c, enum connection_channel ch,
                 const struct msg *m);

#endif
