/* kernel: the state of the supervisor's conversation with its clients, shared
 * by the modules that handle requests (dispatch, handlers, shells, limits,
 * route, outbox). It holds what must outlive any worker: the session, the
 * execution count, the history, the shells and their queues. It holds no
 * socket and no process: those are reached through kernel_io, which
 * supervisor.c wires to the ZeroMQ sockets and the worker's process, and
 * which the unit tests wire to fakes. The kernel owns its requests. */
#ifndef SANDPIT_KERNEL_H
#define SANDPIT_KERNEL_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/options.h"
#include "kernel/supervisor/history.h"
#include "kernel/supervisor/request.h"
#include "protocol/connection.h"
#include "protocol/msg.h"

#define KERNEL_MAX_SHELLS     16 /* the main shell and up to 15 subshells */
#define KERNEL_RECENT_PARENTS 64 /* headers kept for output that comes late */
#define KERNEL_SHELL_ID_MAX   48

struct loop;

/* A shell: the main one ("") or a subshell (JEP 91), each with its queue and
 * at most one request running in the worker (subshells in threads of their
 * own, sharing the main shell's globals). */
struct shell {
    char id[KERNEL_SHELL_ID_MAX];
    struct request *queue_head, *queue_tail; /* waiting for the worker */
    struct request *current;                 /* running in the worker */
    /* Answered by the supervisor later (a history query on its thread): the
     * queue waits for it. Borrowed: the handler owns it until then. */
    struct request *answering;
};

/* What the worker can do for requests now. */
enum kernel_worker {
    KERNEL_WORKER_STARTING, /* started, has not said hello */
    KERNEL_WORKER_READY,    /* serving requests */
    KERNEL_WORKER_FAILING,  /* keeps failing to start: answer requests at once */
};

/* The outside world as request handling sees it. Every function gets ctx. */
struct kernel_io {
    void *ctx;
    /* Sends m to clients on ch without waiting (m borrowed). 0 or -errno. */
    int (*send)(void *ctx, enum connection_channel ch, const struct msg *m);
    /* Sends a frame to the worker, with the binary buffers of msg if given
     * (both borrowed). 0 or -errno. */
    int (*to_worker)(void *ctx, const json_t *frame, const struct msg *buffers);
    /* Sends a signal to the worker's process, if there is one. */
    void (*signal_worker)(void *ctx, int sig);
    enum kernel_worker (*worker)(void *ctx);
    /* The worker said hello: true if it was starting (it is ready now), false
     * if it was not (a hello from running code, to be ignored). */
    bool (*worker_hello)(void *ctx);
    /* Kills the worker and starts another; running requests are answered
     * with why (shells_worker_lost). */
    void (*restart_worker)(void *ctx, const char *why);
    /* The CPU time the worker has used so far, in seconds, or -1 if unknown. */
    double (*worker_cpu)(void *ctx);
    /* Bytes ever queued for the worker, and of those, ever taken by it (or
     * dropped with its link): see child_queued. NULL: not known. */
    unsigned long long (*worker_queued)(void *ctx);
    unsigned long long (*worker_written)(void *ctx);
    /* Whether the client that sent m on ch is still connected. NULL: not
     * known (taken as present). */
    bool (*client_present)(void *ctx, enum connection_channel ch, const struct msg *m);
};

/* What limits.c keeps for the whole kernel rather than for one request. */
struct kernel_limits {
    /* Output of no running request (from threads whose cell has ended, or with a
     * parent the kernel never ran), counted per window of LIMITS_LATE_WINDOW_S. */
    double late_since;
    struct request_output late;
    bool late_told; /* the window's notice has been published */
    /* Messages from the worker, at most LIMITS_RATE a second after a burst of
     * LIMITS_BURST: rate_used of the burst is used, given back with time since
     * rate_at. */
    double rate_used, rate_at;
    /* The worker's CPU time while none of its requests runs: a bucket of
     * background_left seconds, refilled with time, drained by that CPU. */
    long long background_timer; /* the next look at the worker's CPU time; 0: none */
    double background_left;     /* seconds of CPU left to threads in the background */
    double background_cpu;      /* the worker's CPU time at the last look */
    double background_at;       /* the loop's time of the last look */
    bool background_watching;   /* no request runs: the CPU counts */
    /* A line for the next cell: what happened to the worker while none ran. */
    char notice[512];
};

struct kernel {
    const struct options *opts; /* borrowed */
    const char *workspace;      /* absolute; borrowed */
    struct msg_session session;
    int ports[CONNECTION_NCHANNELS]; /* the connection file's, for connect_reply */
    struct loop *loop;               /* borrowed: for time events */
    struct kernel_io io;

    struct shell shells[KERNEL_MAX_SHELLS]; /* [0] is the main shell */
    size_t nshells;
    /* Headers of requests the worker ran lately, by msg_id: output from a
     * thread that a cell started comes parented to that cell, even after it
     * ended. A ring; recent_next is the slot to fill next. */
    json_t *recent[KERNEL_RECENT_PARENTS];
    size_t recent_next;

    int execution_count;
    struct history history;
    char python_version[32];
    json_t *sandbox_report;   /* from the worker's hello, or NULL */
    unsigned long bad_frames; /* frames from the worker that were dropped */
    unsigned long lies;       /* of those, from the running worker, claiming a request
                                 it does not run (route.c) */
    struct kernel_limits limits;
    /* The worker's last history answer is taken once worker_written reaches
     * this (handlers.c: one query answered at a time). */
    unsigned long long history_mark;
    unsigned long history_refused;   /* queries refused while one was answered */
    long long history_event;         /* the loop's watch of the history's answers */
    unsigned long worker_generation; /* + 1 each time the worker goes */
    unsigned long history_asked_gen; /* the worker whose query is asked, */
    bool history_asking;             /* while it is */
    bool loader_pages_released;      /* after the first cell's reply (loadpages.h) */
    /* Requests begun (status busy) and ended (status idle), over the kernel's
     * life: shells.c counts them, and they are equal whenever no request is
     * under way (the unit tests hold it to that). */
    unsigned long long requests_begun, requests_ended;
    /* Over the kernel's life, for kernel_info_reply's sandpit section (a
     * platform's `sandpit status --json`, its monitoring). */
    struct kernel_counts {
        unsigned long long cells;           /* execute requests (not silent) run */
        unsigned long long timeouts;        /* requests that reached their time limit */
        unsigned long long out_of_memory;   /* workers ended by their memory limit */
        unsigned long long worker_restarts; /* workers lost or replaced, restarted */
    } counts;
};

/* Whether a request runs in the worker in any shell. Here, beside the shells'
 * table, rather than in shells.c: limits.c asks it, and shells.c calls
 * limits.c. */
static inline bool kernel_any_running(const struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (k->shells[i].current)
            return true;
    return false;
}

/* Sets up k for the options (borrowed) with a new session, in the history's
 * database too; io and loop are set by the caller. 0 or -errno. */
int kernel_init(struct kernel *k, const struct options *opts, const char *workspace,
                const char *username);
/* Where the history's database is, for the supervisor and its workers: the
 * --history path, or the default one, made absolute into opts->history, with
 * its folder made (0700) for the workers to hide; "off" where there is none,
 * where its folder holds the workspace or the temporary folder (opts's, as
 * real paths), or where a --history folder lies inside one of them: a worker
 * could not hide it, or a cell could move it out of its cover (the log says
 * so). 0 or -ENOMEM. */
int kernel_prepare_history(struct options *opts);
/* Frees every request and remembered header; ends the history's session. */
void kernel_release(struct kernel *k);

#endif
