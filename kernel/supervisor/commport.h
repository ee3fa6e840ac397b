/* commport: the communication port of a kernel started by Jupyter Enterprise
 * Gateway (kernel/cmd/launcher.h), served by the supervisor's loop. The gateway
 * connects, writes one JSON object and closes: {"signum": N} or
 * {"shutdown": 1}. Nothing is written back: that the connection is accepted is
 * the answer to a liveness poll ({"signum": 0}), and once the kernel shuts
 * down the port is closed, so the next poll is refused. Whoever connects is
 * untrusted: a request is at most COMMPORT_MAX_REQUEST bytes and
 * COMMPORT_PEER_TIMEOUT_S seconds, at most COMMPORT_MAX_PEERS are open at once,
 * and anything else is logged and dropped. The commport owns the listening
 * socket and its peers; the events' data is borrowed. */
#ifndef SANDPIT_COMMPORT_H
#define SANDPIT_COMMPORT_H

#include "kernel/supervisor/loop.h"

#define COMMPORT_MAX_REQUEST    4096
#define COMMPORT_MAX_PEERS      8
#define COMMPORT_PEER_TIMEOUT_S 5.0 /* the gateway's launchers wait as long */

/* What the gateway's requests do, as its Python launcher does them to the
 * kernel's process. */
struct commport_events {
    void *data;
    /* signum 2 (SIGINT): interrupt what runs, as an interrupt_request does. */
    void (*interrupt)(void *data);
    /* {"shutdown": 1}, or a signal that ends a process (SIGTERM, SIGHUP,
     * SIGQUIT, SIGKILL): the kernel shuts down. why is for the log. */
    void (*stop)(void *data, const char *why);
};

struct commport;

/* Serves the listening socket *listen_fd, which it takes over (*listen_fd is set
 * to -1, also when it fails: the socket is then closed). Returns the new
 * commport, or NULL when out of memory or when the loop refuses it. */
struct commport *commport_new(struct loop *l, int *listen_fd,
                              const struct commport_events *ev);
/* Closes the port and its peers. Accepts NULL. */
void commport_free(struct commport *c);

/* True while the port listens (until a shutdown request). */
bool commport_listening(const struct commport *c);

#endif
