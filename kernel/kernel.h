/* kernel: the supervisor's state, shared by its loop (supervisor.c) and its
 * message handlers (dispatch.c). The supervisor owns what must outlive any
 * worker: the sockets, the key, the execution count, the history and the
 * queue of requests. Requests own their messages. */
#ifndef SANDPIT_KERNEL_H
#define SANDPIT_KERNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "kernel/child.h"
#include "kernel/history.h"
#include "kernel/options.h"
#include "protocol/connection.h"
#include "protocol/msg.h"
#include "protocol/sign.h"

#define SANDPIT_VERSION "0.1.0"

#define KERNEL_MAX_SHELLS     16 /* the main shell and up to 15 subshells */
#define KERNEL_RECENT_PARENTS 64 /* headers kept for output that comes late */
#define KERNEL_SHELL_ID_MAX   48

/* A request from a client that the worker must answer. */
struct request {
    struct msg *msg;
    enum connection_channel channel;    /* where the reply goes: shell or control */
    char shell_id[KERNEL_SHELL_ID_MAX]; /* "" for the main shell */
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

/* A shell: the main one ("") or a subshell (JEP 91), each with its queue and
 * at most one request running in the worker (subshells in threads of their
 * own, sharing the main shell's globals). */
struct shell {
    char id[KERNEL_SHELL_ID_MAX];
    struct request *queue_head, *queue_tail; /* waiting for the worker */
    struct request *current;                 /* running in the worker */
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
    char **worker_env;  /* the environment workers get (see child_environment) */
    int start_failures; /* consecutive workers that died before saying hello */
    double restart_at;  /* monotonic time of a delayed start; 0: none */
    char python_version[32];
    json_t *sandbox_report; /* from the worker's hello, or NULL */

    struct shell shells[KERNEL_MAX_SHELLS]; /* [0] is the main shell */
    size_t nshells;
    /* Headers of requests the worker ran lately, by msg_id: output from a
     * thread that a cell started comes parented to that cell, even after it
     * ended. A ring; recent_next is the slot to fill next. */
    json_t *recent[KERNEL_RECENT_PARENTS];
    size_t recent_next;
    char input_parent[128]; /* msg_id of the request waiting for input, or "" */

    int execution_count;
    struct history history;
    pid_t parent_pid;  /* the process that started the kernel */
    bool watch_parent; /* end when it goes (JPY_PARENT_PID is set) */
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
/* Kills the worker and starts another; running requests are answered with an
 * error that says why, and subshells are deleted (their threads are gone). */
void kernel_restart_worker(struct kernel *k, const char *why);
/* Interrupts what the worker runs (SIGINT for the main shell, a note for
 * subshells) and arms the escalation to a restart. reason is for the log. */
void kernel_interrupt(struct kernel *k, const char *reason);
double kernel_now(void);

/* dispatch.c */
void dispatch_msg(struct kernel *k, struct msg **m, enum connection_channel ch);
/* A well-signed message whose header could be read but not the rest (m borrowed,
 * as msg_parse leaves it on -EPROTO): a request gets an error reply saying why. */
void dispatch_unreadable(struct kernel *k, struct msg *m, enum connection_channel ch,
                         const char *why);
void dispatch_worker_frame(struct kernel *k, struct link_frame *f);
void dispatch_pump(struct kernel *k);
/* The worker went away: answer every running request with why, and delete the
 * subshells (their threads went with it). */
void dispatch_worker_lost(struct kernel *k, const char *why);
/* Running and queued requests, for the loop's timers and the release at exit. */
bool dispatch_any_running(const struct kernel *k);
void dispatch_check_timers(struct kernel *k, double now);
double dispatch_next_deadline(const struct kernel *k); /* 0: none */
void dispatch_release(struct kernel *k);
void dispatch_init(struct kernel *k);
void dispatch_stdin(struct kernel *k, struct msg **m);
void request_free(struct request *r);

#endif
