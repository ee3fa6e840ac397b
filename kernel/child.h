/* child: the worker process as the supervisor sees it.
 * Starts the worker (fork, then exec of this same binary, so that nothing of
 * the supervisor's memory, above all the HMAC key, reaches it), carries framed
 * messages to it without ever blocking, and ends it. The struct owns the pid,
 * the link's descriptor and both buffers. */
#ifndef SANDPIT_CHILD_H
#define SANDPIT_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel/link.h"
#include "sandbox/cgroup.h"

#define CHILD_RETIRED 4 /* groups of stopped workers not reaped yet */

enum child_state {
    CHILD_DOWN,     /* no worker */
    CHILD_STARTING, /* started, has not said hello yet */
    CHILD_READY,    /* serving requests */
};

struct child {
    pid_t pid;
    int fd; /* the supervisor's end of the link, non-blocking; -1 when down */
    enum child_state state;
    struct link_reader reader;
    unsigned char *out; /* bytes not yet written to the link */
    size_t out_len, out_cap;
    double started_at; /* monotonic seconds */
    bool link_closed;  /* the link closed before the process ended */
    int log_fd;        /* the read end of the worker's fd 2; -1 when none */
    char log_buf[1024];
    size_t log_len;
    struct sandbox_cgroup cgroup;                 /* the running worker's group */
    struct sandbox_cgroup retired[CHILD_RETIRED]; /* stopped workers', until reaped */
    unsigned started;                             /* workers started; names groups */
};

void child_init(struct child *c);
void child_release(struct child *c);

/* Starts a worker: argv[0] is ignored and replaced by this binary; envp is
 * its whole environment. The worker gets the link as fd 3, /dev/null as stdin
 * and stdout, a pipe for its log as fd 2 (read with child_read_log), and
 * nothing else. With limits (borrowed), it runs in a cgroup of its own that
 * has them, from before its first instruction; SANDPIT_CGROUP in its
 * environment says what was made, or why nothing was. 0 or -errno. */
int child_start(struct child *c, char *const argv[], char *const envp[],
                const struct sandbox_cgroup_limits *limits);

/* A child process was reaped: removes the cgroups of workers that have ended. */
void child_reaped(struct child *c);

/* True if the running worker's cgroup killed it for memory. */
bool child_memory_killed(const struct child *c);

/* The environment a worker gets (a new NULL-terminated array of new strings;
 * free with child_free_environment): with the sandbox on, only variables known
 * to be harmless and those named in pass_env (comma-separated); a Jupyter
 * server's environment can hold tokens and credentials. */
char **child_environment(bool sandbox, const char *pass_env);
void child_free_environment(char **envp);

/* Reads the worker's log pipe and writes its lines to the kernel's log, marked
 * as the worker's, with control characters removed (a cell can write there
 * too). Call when the pipe is readable. */
void child_read_log(struct child *c);

/* Kills the worker (SIGKILL) and closes the link; the pid is left for the
 * SIGCHLD handler to reap. Safe on a child that is down. */
void child_stop(struct child *c);

/* Queues a frame (JSON and binary buffers, both borrowed) for the worker and
 * writes what the link takes now. 0, or -errno when the link is broken. */
int child_send(struct child *c, const char *json, size_t len,
               const struct wire_frame *buffers, size_t nbuffers);

/* Writes queued bytes (call when the link is writable). 0 or -errno. */
int child_flush(struct child *c);

bool child_has_pending(const struct child *c);

/* Sends a signal to the worker if there is one. */
void child_signal(struct child *c, int sig);

#endif
