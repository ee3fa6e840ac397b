/* template_fork: the worker template's loop. `sandpit-worker --as-template` starts
 * Python and imports the runtime, then waits here for the supervisor's
 * requests (kernel/link/template_msg.h) and forks a worker for each: a new worker
 * costs a fork and its confinement rather than an exec and Python's start.
 * The template is never confined and never runs a cell or imports from a
 * folder the user's code can write; each worker confines itself after the
 * fork, as an exec'd worker does. */
#ifndef SANDPIT_TEMPLATE_FORK_H
#define SANDPIT_TEMPLATE_FORK_H

#include <stddef.h>

/* Serves requests on the control socket ctl until the supervisor closes it.
 * Returns 0 in the template when it should exit (the supervisor has gone),
 * -errno when the control socket fails, and 1 in each new worker, which then
 * has its link on fd 3, its log on fd 2 and on logfd (the descriptor its log
 * writes to), /dev/null on 0 and 1, no other descriptor, its cgroup joined,
 * the supervisor as its parent, and note (a buffer of notelen bytes) saying
 * what the supervisor made of its cgroup. */
int spawner_serve(int ctl, int logfd, char *note, size_t notelen);

#endif
