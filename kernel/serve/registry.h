/* registry: the server's kernels. Each is a `sandpit kernel` process (its
 * supervisor and worker, as for any client) that the server started with a
 * connection file of its own, fresh key and all, in the server's private
 * folder (mode 0700, out of every worker's reach), and a client on its five
 * channels: its iopub is read here, once for every WebSocket client of the
 * kernel, and kept for a while for those who reconnect. The registry knows
 * nothing of WebSockets: what a kernel says on iopub, and that it died, go
 * to the functions the server registered. Ownership: the registry owns its
 * kernels; a struct serve_kernel pointer is borrowed until the kernel is
 * removed (the on_gone hook is the last moment it is valid). */
#ifndef SANDPIT_SERVE_REGISTRY_H
#define SANDPIT_SERVE_REGISTRY_H

#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>

#include "kernel/client/client.h"
#include "kernel/client/launch.h"
#include "kernel/options.h"
#include "kernel/serve/model.h"

#define REGISTRY_REPLAY_MAX    256        /* iopub messages kept for a reconnection */
#define REGISTRY_REPLAY_BYTES  (2u << 20) /* ... and at most these bytes of them */
#define REGISTRY_AWAY_S        600.0      /* a session away longer is forgotten */
#define REGISTRY_SESSIONS_MAX  64         /* sessions away remembered per kernel */
#define REGISTRY_ENV_MAX       64         /* KERNEL_* variables a request may set */
#define REGISTRY_ENV_VALUE_MAX 4096
#define REGISTRY_DEAD_KEEP_S   30.0 /* a dead kernel is listed this long */

struct registry_replay_item {
    struct msg *m;
    unsigned long long seq;
    size_t bytes;
};

struct registry_session {
    char id[64];
    unsigned long long last_seq; /* the last iopub message it was sent */
    double left_at;              /* monotonic */
};

struct serve_kernel;

/* The end of an asynchronous start: status 0 with k ready, or an HTTP status
 * with a sentence and k NULL (the kernel has gone). */
typedef void (*registry_ready_fn)(void *arg, struct serve_kernel *k, int status,
                                  const char *err);

struct ready;

struct serve_kernel {
    char id[MODEL_ID_LEN + 1];
    char name[64];
    char state[16];       /* starting, idle, busy, restarting, dead */
    char user[64];        /* KERNEL_USERNAME, or "" */
    double last_activity; /* the wall clock's seconds */
    double busy_since;    /* monotonic; 0 when idle */
    int connections;
    char *connfile;
    struct launched proc;
    struct client client;
    struct loop_watch *iopub_watch, *exit_watch;
    struct relay *relay; /* its stderr, with --log-format json */
    /* While it starts (registry_start_async): the handshake, the shell
     * socket's watch, the resend timer, and who waits. */
    struct ready *ready;
    struct loop_watch *shell_watch;
    lws_sorted_usec_list_t start_timer;
    double start_deadline, poke_interval;
    registry_ready_fn ready_fn;
    void *ready_arg;
    /* The replay ring: the last iopub messages, oldest first. */
    struct registry_replay_item *ring;
    size_t ring_start, ring_len, ring_bytes;
    unsigned long long seq;
    struct registry_session sessions[REGISTRY_SESSIONS_MAX];
    size_t nsessions;
    double dead_at; /* monotonic; 0 while alive */
    void *bridge;   /* the bridge's own per-kernel state (borrowed by it) */
    void *e2b;      /* e2b_exec's, when the kernel is an E2B context */
    struct serve_kernel *next;
    struct registry *reg;
};

struct registry {
    struct serve_kernel *head;
    int count, max_kernels; /* max_kernels 0: no limit */
    struct options *kopts;  /* borrowed: the kernels' options */
    const char *workspace;  /* absolute: the kernels' workspace */
    const char *workspaces; /* --workspaces DIR, or NULL */
    const char *private_dir;
    struct lws_vhost *vh;
    struct lws_context *ctx;
    double cull_idle_s;
    bool cull_busy, cull_connected;
    bool relay_logs; /* kernels' stderr through the server's log */
    lws_sorted_usec_list_t cull_timer;
    /* Hooks (may be NULL): every iopub message of a kernel, borrowed for the
     * call; a kernel that died (its clients should be told); a kernel about
     * to be freed. */
    void (*on_iopub)(void *arg, struct serve_kernel *k, const struct msg *m,
                     unsigned long long seq);
    void (*on_dead)(void *arg, struct serve_kernel *k);
    void (*on_gone)(void *arg, struct serve_kernel *k);
    void *hook_arg;
    unsigned long started, culled, died, spawned;
    /* From the kernels' iopub: cells run (execute_input), cells ended by the
     * time limit (TimeoutError), workers lost (WorkerDied), of which to the
     * memory limit (its evalue says memory). */
    unsigned long cells, timeouts, worker_restarts, memory_ends;
};

void registry_init(struct registry *r);
/* Starts the timer that culls idle kernels and removes dead ones; r->ctx
 * must be set. */
void registry_start_timers(struct registry *r);

/* Stops every kernel (shutdown_request, then signals) and frees them. */
void registry_release(struct registry *r);

/* Starts a kernel named name (NULL: the default), with env (a JSON object of
 * the request, may be NULL: only its KERNEL_* strings are used) and waits
 * until it answers. 0 with *out borrowed; or an HTTP status (400, 403, 404,
 * 500) with a sentence in err. */
int registry_start(struct registry *r, const char *name, const json_t *env,
                   struct serve_kernel **out, char *err, size_t errlen);

/* As registry_start, without waiting: 0 with *out borrowed, in state
 * "starting" (listed, and removable), and fn(arg, ...) called once from
 * the loop when it is ready or has failed; or an HTTP status with err (fn
 * is then not called). */
int registry_start_async(struct registry *r, const char *name, const json_t *env,
                         registry_ready_fn fn, void *arg, struct serve_kernel **out,
                         char *err, size_t errlen);

/* Whoever waits for k's start has gone: fn is not called. */
void registry_forget_waiter(struct serve_kernel *k);

/* The kernel of id, or NULL. */
struct serve_kernel *registry_find(struct registry *r, const char *id);

/* Stops the kernel and removes it (k is freed). */
void registry_remove(struct registry *r, struct serve_kernel *k);

/* Interrupts it: an interrupt_request on control. 0 or -errno. */
int registry_interrupt(struct serve_kernel *k);

/* Restarts its interpreter and waits until it answers. 0 or -errno with a
 * sentence in err. */
int registry_restart(struct serve_kernel *k, char *err, size_t errlen);

/* The kernel's model, new. */
json_t *registry_model(const struct serve_kernel *k);

/* Every kernel's model, a new array. */
json_t *registry_list(const struct registry *r);

/* Notes activity now (a message from a client or the kernel). */
void registry_touch(struct serve_kernel *k);

/* Drains the kernel's iopub: after anything that may have taken ZMQ_FD's
 * signal (a wait on its client). */
void registry_drain_iopub(struct serve_kernel *k);

/* Drops the replies waiting on the kernel's shell, which no one reads once
 * it runs (its WebSocket clients have shell sockets of their own). */
void registry_drain_shell(struct serve_kernel *k);

/* The session session_id has left: remember the last message it had. */
void registry_session_away(struct serve_kernel *k, const char *session_id,
                           unsigned long long last_seq);

/* For a session that comes back: fn(arg, m, seq) for each kept message it
 * missed, oldest first; the session is forgotten. Returns the count. */
size_t registry_replay(struct serve_kernel *k, const char *session_id,
                       void (*fn)(void *arg, const struct msg *m, unsigned long long seq),
                       void *arg);

/* The name of the server's one kind of kernel. */
#define REGISTRY_KERNEL_NAME "sandpit"

#endif
