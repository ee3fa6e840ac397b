/* worker_template: the worker template, as the supervisor sees it. A process of
 * the worker's program (`sandpit-worker --as-template`), exec'd like a worker so that it
 * holds nothing of the supervisor's memory, that starts Python and imports
 * the runtime once and then forks each new worker on request
 * (kernel/link/template_msg.h, kernel/worker/template_fork.c): a restart or a crash costs
 * a fork and a confinement rather than an exec and Python's start. It runs no
 * user code and is not confined; the workers it forks confine themselves.
 * Its control socket is a file event of the loop while it starts; the struct
 * owns the socket and the process. */
#ifndef SANDPIT_WORKER_TEMPLATE_H
#define SANDPIT_WORKER_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct worker_template;

enum template_state {
    TEMPLATE_STARTING, /* started, not ready yet */
    TEMPLATE_READY,    /* forks workers */
    TEMPLATE_DOWN,     /* gone, or of no use: workers are exec'd */
};

/* Starts the template: argv as a worker's (argv[0] the program; the flag that
 * makes it the template is added), envp its whole environment (both borrowed). The
 * supervisor becomes a subreaper, so that the workers the template forks are its
 * children. NULL when it cannot be started (logged). */
struct worker_template *template_start(struct loop *loop, char *const argv[],
                                       char *const envp[]);

/* Kills the template (its pid is left for the SIGCHLD handler to reap).
 * Accepts NULL. */
void template_free(struct worker_template *t);

enum template_state template_state(const struct worker_template *t);
pid_t template_pid(const struct worker_template *t);

/* Asks a ready template for a worker with these descriptors (borrowed; see
 * SPAWN_FD_*) and cgroup note, and waits for its pid: the template answers in
 * a fork's time, and one that does not within a second is killed and taken
 * down. 0 with *pid set, or -errno (the template is then down). */
int template_spawn(struct worker_template *t, const int *fds, size_t nfds,
                   const char *note, pid_t *pid);

/* A child process was reaped: true if it was the template (now down). */
bool template_reaped(struct worker_template *t, pid_t pid, int status);

#endif
