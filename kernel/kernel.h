/* kernel: the supervisor's state, shared by its loop (supervisor.c) and its
 * message handlers (dispatch.c). The supervisor owns what must outlive any
 * worker: the sockets, the key, the execution count, the history and the
 * queue of requests. Requests own their messages. */
#ifndef SANDPIT_KERNEL_H
#define SANDPIT_KERNEL_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/child.h"
#include "kernel/history.h"
#include "kernel/options.h"
#include "protocol/connection.h"
#include "protocol/msg.h"
#include "protocol/sign.h"

#define SANDPIT_VERSION "0.1.0"

/* A request from a client that the worker must answer. */
struct request {
    struct msg *msg;
    enum connection_channel channel; /* where the reply goes: shell or control */
    struct request *next;
    /* execute_request only */
    int execution_count;
    bool silent, store_history, stop_on_error;
    double timeout_s; /* effective limit for this cell; 0: none */
    double sent_at;   /* monotonic time it went to the worker */
    bool interrupted_for_timeout;
    double interrupt_deadline;   /* after SIGINT: restart the worker if still running */
    unsigned long output_bytes;  /* output sent for this request */
    unsigned long dropped_bytes; /* output dropped past the cap */
};

struct kernel {
    struct options *opts;
    struct connection conn;
    struct sign sign;
    struct msg_session session;
    void *zctx;
    void *sockets[CONNECTION_NCHANNELS];
    int sigfd;
    char *workspace; /* absolute */
    char *tmpdir;    /* the private temporary folder we made; removed at exit */

    struct child child;
    int start_failures; /* consecutive workers that died before saying hello */
    double restart_at;  /* monotonic time of a delayed start; 0: none */
    char python_version[32];
    json_t *sandbox_report; /* from the worker's hello, or NULL */

    struct request *queue_head, *queue_tail; /* waiting for the worker */
    struct request *current;                 /* running in the worker */
    json_t *last_parent; /* header of the last request the worker ran */

    int execution_count;
    struct history history;
    bool running;
    int exit_status;
};

/* supervisor.c: sending. Serialises, signs and sends m on a channel without
 * waiting (m is borrowed). 0 or -errno; a failure is logged. */
int kernel_send(struct kernel *k, enum connection_channel ch, const struct msg *m);
/* Replies and events; each takes over *content (NULL means {}). */
void kernel_reply(struct kernel *k, const struct request *req, const char *msg_type,
                  json_t **content, json_t *metadata);
void kernel_publish(struct kernel *k, const json_t *parent_header, const char *msg_type,
                    json_t **content);
void kernel_publish_status(struct kernel *k, const struct request *req,
                           const char *state);
/* Sends a JSON object to the worker, with the binary buffers of a message if
 * with_buffers is given (both borrowed). 0 or -errno. */
int kernel_send_worker(struct kernel *k, const json_t *obj,
                       const struct msg *with_buffers);
/* Kills the worker and starts another; the running request, if any, is
 * answered with an error that says why. */
void kernel_restart_worker(struct kernel *k, const char *why);
/* Sends SIGINT to the worker if it is running a request, and arms the
 * escalation to a restart. */
void kernel_interrupt(struct kernel *k);
double kernel_now(void);

/* dispatch.c */
void dispatch_msg(struct kernel *k, struct msg **m, enum connection_channel ch);
void dispatch_worker_frame(struct kernel *k, struct link_frame *f);
void dispatch_pump(struct kernel *k);
/* The worker went away while req was running: answer it. */
void dispatch_worker_lost(struct kernel *k, const char *why);
void dispatch_stdin(struct kernel *k, struct msg **m);
void request_free(struct request *r);

#endif
