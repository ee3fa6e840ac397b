/* cgroup: a control group of its own for each worker, made by the supervisor.
 *
 * RLIMIT_DATA counts private memory only: shared mappings, tmpfs files and page cache
 * escape it, and RLIMIT_NPROC does not bind root. A cgroup counts them all. The
 * supervisor makes the group under its own (cgroup v2, or the v1 memory, pids and cpu
 * hierarchies) before it forks the worker, the child joins it between fork and exec,
 * so the worker runs no instruction of its own outside it, and the supervisor removes
 * it once the worker has ended. The worker checks from inside which group it is in
 * and reports the layer (sandbox.h: "cgroup"), so the report never claims a limit the
 * kernel does not enforce.
 * Ownership: a struct sandbox_cgroup owns its paths and descriptors; limits are
 * borrowed for the duration of a call.
 */
#ifndef SANDPIT_SANDBOX_CGROUP_H
#define SANDPIT_SANDBOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/sandbox.h"

enum sandbox_cgroup_ctl {
    SANDBOX_CGROUP_MEMORY, /* v2: the one group, which has all three */
    SANDBOX_CGROUP_PIDS,
    SANDBOX_CGROUP_CPU,
    SANDBOX_CGROUP_NCTL,
};

/* Above RLIMIT_DATA, so that a large private allocation still fails with MemoryError
 * before the group's limit ends the worker: the group also holds the interpreter's
 * files, page tables and socket buffers. */
#define SANDBOX_CGROUP_HEADROOM_MIN (64ull << 20)

struct sandbox_cgroup_limits {
    uint64_t memory_bytes; /* the memory limit asked for (--memory); 0: none */
    unsigned tasks;        /* processes and threads together; 0: none */
    double cpus;           /* CPU time, in CPUs (--cpus); 0: none */
};

struct sandbox_cgroup {
    int version;                     /* 1 or 2 when a group was made; 0 when none */
    char *dirs[SANDBOX_CGROUP_NCTL]; /* each hierarchy's group (v2: [0] only); owned */
    int procs[SANDBOX_CGROUP_NCTL];  /* their cgroup.procs, open for the child; or -1 */
    pid_t pid;                       /* the worker it holds; 0 before it is started */
    char detail[SANDBOX_DETAIL_MAX]; /* what was made, or why nothing was */
};

/* The memory limit of the group for a --memory of memory_bytes: that plus an eighth,
 * and at least SANDBOX_CGROUP_HEADROOM_MIN more (0 for 0). */
uint64_t sandbox_cgroup_memory_limit(uint64_t memory_bytes);

void sandbox_cgroup_init(struct sandbox_cgroup *cg);

/* In the supervisor, before fork: makes the group "sandpit-<supervisor pid>-<seq>"
 * under the supervisor's own, sets the limits and opens cgroup.procs for the child.
 * Groups that earlier supervisors left behind are removed first (their pid is gone).
 * Returns 0, or -errno with cg->detail saying why there is no group (the worker then
 * runs without one, and says so in its report). */
int sandbox_cgroup_create(struct sandbox_cgroup *cg, unsigned seq,
                          const struct sandbox_cgroup_limits *lim);

/* In the child, between fork and exec: joins the group. Only async-signal-safe calls.
 * 0, or -errno (the worker then finds itself outside and reports it). */
int sandbox_cgroup_join(const struct sandbox_cgroup *cg);

/* In the supervisor, after fork: records the worker's pid and closes cgroup.procs. */
void sandbox_cgroup_started(struct sandbox_cgroup *cg, pid_t pid);

/* Removes the group once its worker has ended: 0 (cg is then empty again), -EBUSY if
 * a task is still in it (try again once it is reaped), or -errno. */
int sandbox_cgroup_remove(struct sandbox_cgroup *cg);

/* Frees what cg holds without removing the group. */
void sandbox_cgroup_release(struct sandbox_cgroup *cg);

/* True if the group's memory limit made the kernel kill a task in it. */
bool sandbox_cgroup_memory_killed(const struct sandbox_cgroup *cg);

#endif
