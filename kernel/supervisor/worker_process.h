/* worker_process: the worker's process and its link, as the supervisor sees them.
 * Starts the worker (vfork, then exec of the worker's program: Python's own
 * with sandpit-worker.so preloaded, so that nothing of the supervisor's memory,
 * above all the HMAC key, reaches it; or a fork of the worker template, which
 * was exec'd so too), keeps a spare started beforehand, carries frames
 * to it without ever blocking, hands each frame it sends to a callback, relays
 * its log, and ends it. The link's and the log's descriptors are file events
 * of the loop while the worker lives. The struct is opaque: it owns the pid,
 * both descriptors and both buffers. */
#ifndef SANDPIT_WORKER_PROCESS_H
#define SANDPIT_WORKER_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel/link/link.h"
#include "sandbox/cgroup.h"

struct loop;
struct child;
struct worker_template;

enum child_state {
    CHILD_DOWN,     /* no worker */
    CHILD_STARTING, /* started, has not said hello yet */
    CHILD_READY,    /* serving requests */
};

/* Where the worker's frames go. */
struct child_events {
    void *data;
    /* A whole frame from the worker (borrowed for the call). The child may be
     * stopped and started again from inside. */
    void (*frame)(void *data, const struct link_frame *f);
    /* The worker broke the link's framing, or announced a frame larger than the
     * child's frame limit: it is of no more use. what says which, as the end of
     * a sentence that starts "The worker" ("sent a corrupt message"). */
    void (*corrupt)(void *data, const char *what);
};

/* A child with no process, whose descriptors will be watched by loop (both
 * borrowed: they outlive it). NULL when out of memory; child_free stops the
 * worker and accepts NULL. */
struct child *child_new(struct loop *loop, const struct child_events *events);
void child_free(struct child *c);

/* The largest frame the worker may send (see link_worker_frame_limit); a
 * frame that announces more ends the worker, before its body is read. */
void child_set_frame_limit(struct child *c, size_t max);

/* Starts a worker: argv[0] is the worker's program (sandpit-worker); envp is
 * its whole environment. The worker gets the link as fd 3, /dev/null as stdin
 * and stdout, a pipe for its log as fd 2 (relayed to the kernel's log, marked
 * as the worker's), and nothing else. With limits (borrowed), it runs in a
 * cgroup of its own that has them, from before its first instruction;
 * SANDPIT_CGROUP in its environment says what was made, or why nothing was.
 * With a ready template (borrowed; NULL or not ready: none), the worker is
 * forked from it with the same descriptors and group rather than exec'd, and
 * is the supervisor's child all the same. A spare (child_start_spare), when
 * there is one, is taken instead: it is most likely ready already. 0 or
 * -errno. */
int child_start(struct child *c, char *const argv[], char *const envp[],
                const struct sandbox_cgroup_limits *limits, struct worker_template *tpl);

/* Starts a worker beforehand, for the next child_start to take: forked from a
 * ready template (never exec'd), it confines itself and says hello on its
 * link, which is not read until it takes over, and meanwhile costs what the
 * template does not share with it. Does nothing when there is one already. 0,
 * -EAGAIN when the template is not ready, or -errno. */
int child_start_spare(struct child *c, char *const argv[], char *const envp[],
                      const struct sandbox_cgroup_limits *limits,
                      struct worker_template *tpl);

/* Kills the spare, if any (the kernel is stopping). */
void child_stop_spare(struct child *c);

/* The kernel is stopping, its workers and template stopped: every process still
 * below the supervisor ends too, in a group or not (one that left its worker's
 * group, where nothing kept it in, came back to the supervisor as an orphan). */
void child_end_all(struct child *c);

/* A child process was reaped, with status (waitpid's): true if it was the
 * spare (now gone, its end logged). */
bool child_spare_reaped(struct child *c, pid_t pid, int status);

/* A child process was reaped: removes the cgroups of workers that have ended. */
void child_reaped(struct child *c);

/* True if the running worker's cgroup killed it for memory. */
bool child_memory_killed(const struct child *c);

/* Kills the worker (SIGKILL) and closes the link; the pid is left for the
 * SIGCHLD handler to reap. Safe on a child that is down. */
void child_stop(struct child *c);

/* Queues a frame (JSON and binary buffers, both borrowed) for the worker and
 * writes what the link takes now; the rest goes when the link is writable.
 * 0, or -errno when there is no link or it is broken. */
int child_send(struct child *c, const char *json, size_t len,
               const struct wire_frame *buffers, size_t nbuffers);

/* Bytes ever queued for workers by child_send, and of those, bytes written to
 * their links or dropped with them (both only grow, over every worker): an
 * answer queued when child_queued was Q has been taken once child_written
 * reaches Q. While more than a few MiB wait, the link is not read: a worker
 * that asks without reading stops being heard. */
unsigned long long child_queued(const struct child *c);
unsigned long long child_written(const struct child *c);

/* The worker's process has been reaped: the link is closed and the pid
 * forgotten, with no signal (the pid may already be another process's). */
void child_exited(struct child *c);

/* Sends a signal to the worker if there is one. */
void child_signal(struct child *c, int sig);

enum child_state child_state(const struct child *c);
/* The worker said hello: from STARTING to READY. */
void child_set_ready(struct child *c);
/* The worker's pid, 0 when down. */
pid_t child_pid(const struct child *c);
/* Seconds since it was started. */
double child_age(const struct child *c);
/* The CPU time the worker has used, all its threads together, in seconds (from
 * /proc/<pid>/stat, which the supervisor reads from outside), or -1 when there is
 * no worker or it cannot be read. */
double child_cpu_seconds(const struct child *c);
/* Whether its link closed before its process ended (its code closed fd 3). */
bool child_link_closed(const struct child *c);

#endif
