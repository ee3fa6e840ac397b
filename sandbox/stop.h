/* stop: ends every process a worker made, not only the worker.
 * Called by the supervisor when a worker is stopped (a restart, a crash, the kernel's
 * end). A worker's preloads run before its seccomp filter, so they can fork; what they
 * fork has no filter and must not outlive the worker. With a cgroup, the group holds
 * every such process (they cannot leave it: Landlock keeps /sys read-only); without
 * one, the supervisor's process tree does, since the supervisor is a subreaper and
 * every orphan of the tree comes back to it. Nothing here allocates for the caller. */
#ifndef SANDPIT_SANDBOX_STOP_H
#define SANDPIT_SANDBOX_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/cgroup.h"

/* SIGKILL to every process of the group: cgroup.kill where the kernel has it (v2,
 * Linux 5.14+), else each process listed in cgroup.procs, again until a reading lists
 * none that was not already signalled (a process may fork meanwhile). The number of
 * processes signalled (0 for cgroup.kill), or -errno (-ENOENT: no group). */
int sandbox_stop_group(const struct sandbox_cgroup *cg);

/* The same for one group's folder (v1 or v2): also used for the groups that a
 * supervisor killed outright left behind. */
int sandbox_stop_group_dir(const char *dir);

/* SIGKILL to every descendant of root (found in /proc by parent), but the nkeep
 * processes of keep (0 entries are ignored) and their own descendants; again until a
 * reading finds none that was not already signalled. The number signalled, or -errno. */
int sandbox_stop_tree(pid_t root, const pid_t *keep, size_t nkeep);

/* True if name is one of a kernel's own ("sandpit-<pid>-...": a worker's group, a
 * private folder) and no process has that pid: what a kernel that ended without
 * cleaning up (killed outright) left behind, for the next kernel to remove. The
 * supervisor's cgroups (cgroup.c) and private folders (tmpdir.c) are swept by it. */
bool sandbox_stop_left_behind(const char *name);

#endif
