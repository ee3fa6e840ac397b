/* worker_policy: the worker's sandbox policy, built from its options before it
 * confines itself: what it may read (the interpreter, --venv and its .pth
 * folders, --read, PYTHONPATH), what is hidden (the connection file, the
 * history, the user's secrets, the other kernels' private folders) and its
 * limits. The struct owns everything the policy points to; the options and
 * the trial are borrowed, and must outlive it. */
#ifndef SANDPIT_WORKER_POLICY_H
#define SANDPIT_WORKER_POLICY_H

#include <limits.h>

#include "kernel/options.h"
#include "sandbox/home.h"
#include "sandbox/sandbox.h"

struct worker_policy {
    struct sandbox_policy policy; /* points into the rest */
    struct sandbox_masks masks;
    char **ro_paths;
    const char **hidden;
    char private_root[PATH_MAX];
    char other_roots[2][PATH_MAX];
};

/* Builds the policy for o: cgroup_note says what the supervisor made of the
 * worker's cgroup, trial is the namespaces' early trial (both borrowed). 0, or
 * -1 when the worker must not start (logged; it then exits with
 * WORKER_EXIT_SANDBOX, and nothing needs releasing). */
int worker_policy_build(struct worker_policy *wp, const struct options *o,
                        const char *cgroup_note, struct sandbox_trial *trial);

/* Frees what a built policy owns. */
void worker_policy_release(struct worker_policy *wp);

#endif
