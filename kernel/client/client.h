/* client: a Jupyter client in C, on the protocol layer and libzmq.
 * It connects to a kernel's five channels from a connection file, sends a
 * request and gathers what answers it: the reply on the request's channel and
 * the iopub messages parented to it, up to status idle. `sandpit run`,
 * `start`, `stop`, `status` and `mcp` are built on it; nothing here knows
 * about any of them. A struct client owns its sockets, signer and connection;
 * every struct msg it hands out is new (caller frees). */
#ifndef SANDPIT_CLIENT_H
#define SANDPIT_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/connection.h"
#include "protocol/msg.h"
#include "protocol/sign.h"

#define CLIENT_ID_LEN 128 /* room for a msg_id this client makes */

struct client {
    struct connection conn;
    struct sign sign;
    struct msg_session session;
    void *zctx;
    void *sockets[CONNECTION_NCHANNELS]; /* DEALER x3, SUB (iopub), REQ (hb) */
    unsigned long dropped;               /* messages that failed to parse or verify */
};

/* Reads the connection file and connects the five channels (iopub subscribed
 * to everything). c is initialised by the call; on failure it holds nothing
 * to release. Returns 0 or -errno with a sentence in err. */
int client_open(struct client *c, const char *connection_file, char *err, size_t errlen);

/* How client_open_with connects; a field left zero keeps ZeroMQ's default. */
struct client_options {
    /* Milliseconds before a refused connection is tried again (ZeroMQ waits
     * 100 by default): a client that connects to a kernel it has just started
     * and does not want to lose up to that long once the kernel listens. */
    int reconnect_ms;
};

/* client_open, with options (NULL: the defaults). */
int client_open_with(struct client *c, const char *connection_file,
                     const struct client_options *o, char *err, size_t errlen);
void client_close(struct client *c);

/* Sends a request of type on channel ch (shell, control or stdin). Takes over
 * *content and *metadata (NULL means {}) and sets them to NULL on every path.
 * When id is not NULL the new msg_id is written there (CLIENT_ID_LEN bytes).
 * Returns 0 or -errno. */
int client_send(struct client *c, enum connection_channel ch, const char *type,
                json_t **content, json_t **metadata, char *id);

/* Sends an execute_request for code with the usual fields; metadata as in
 * client_send. */
int client_execute(struct client *c, const char *code, bool allow_stdin,
                   json_t **metadata, char *id);

/* client_execute_quiet's flags. */
#define CLIENT_EXEC_SILENT     1u /* silent, and not kept in the history */
#define CLIENT_EXEC_KEEP_GOING 2u /* stop_on_error false: the cells after run */

/* An execute_request for code without stdin, with flags; no metadata. As
 * client_send otherwise. */
int client_execute_quiet(struct client *c, const char *code, unsigned flags, char *id);

/* Receives the next message on ch, waiting up to timeout_ms (-1: no limit).
 * Messages that do not parse or verify are counted in c->dropped and skipped.
 * Returns 0 with *out new, -ETIMEDOUT, or -errno. */
int client_recv(struct client *c, enum connection_channel ch, int timeout_ms,
                struct msg **out);

/* What client_wait does while it waits. Every field may be left zero. */
struct client_wait {
    /* Each iopub message parented to the request, status messages included,
     * in the order the kernel sent them. The message is borrowed. */
    void (*on_iopub)(void *arg, const struct msg *m);
    /* Descriptors to watch besides the sockets (a pidfd, standard input):
     * when one is readable, on_fd is called with it; a non-zero return ends
     * the wait with that value. */
    const int *fds;
    size_t nfds;
    int (*on_fd)(void *arg, int fd);
    void *arg;
    double timeout_s;  /* 0: no limit */
    bool skip_idle;    /* do not wait for status idle (kernels that send none) */
    bool no_heartbeat; /* do not ping the heartbeat channel while waiting */
    /* client_ready asks on control, which a kernel answers while a cell runs
     * (on shell the question waits behind the cell). */
    bool on_control;
};

/* Waits for the reply to request id on ch and, unless skip_idle, for the
 * iopub status idle parented to it. Messages parented to other requests are
 * skipped. While it waits it pings the heartbeat every few seconds and gives
 * up with -EHOSTDOWN when the kernel stops answering. On success *reply is
 * new (caller frees). Returns 0, -ETIMEDOUT, -EHOSTDOWN, on_fd's value, or
 * -errno. */
int client_wait(struct client *c, enum connection_channel ch, const char *id,
                const struct client_wait *w, struct msg **reply);

/* Sends kernel_info_request until the kernel answers one of them and the
 * iopub subscription is known to work (an iopub message parented to one of
 * them has arrived), so that no output of the next request is lost. Late
 * messages from before the call (a kernel that has just exited) do not count. w (may be
 * NULL) gives the time limit and descriptors to watch, as for client_wait. *info (when
 * not NULL) is the new kernel_info_reply. Returns 0, -ETIMEDOUT, on_fd's value, or
 * -errno. */
int client_ready(struct client *c, const struct client_wait *w, struct msg **info);

#endif
