/* cgroup_view: where this process's groups live, for cgroup.c (the
 * supervisor, making a worker's group) and cgroup_check.c (the worker, saying
 * which group it is in): the texts of /proc/self/cgroup and
 * /proc/self/mountinfo, read once, and the folders found through them. Texts
 * are borrowed by the view; what view_read returns is the caller's. */
#ifndef SANDPIT_SANDBOX_CGROUP_VIEW_H
#define SANDPIT_SANDBOX_CGROUP_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "sandbox/cgroup.h"

#if defined(__SANITIZE_ADDRESS__)
#define CGROUP_ASAN 1
#else
#define CGROUP_ASAN 0
#endif

/* Each hierarchy's controller, by enum sandbox_cgroup_ctl. */
extern const char *const cgroup_ctl_names[SANDBOX_CGROUP_NCTL];

/* What a process sees of its groups: the texts of /proc/self/cgroup and
 * /proc/self/mountinfo (borrowed). Every folder below is found through one, so where
 * the hierarchy lies is all a unit test has to choose (internal.h). */
struct cgroup_view {
    const char *self;
    const char *mountinfo;
};

/* This process's view. Its texts are new, in texts[0] and texts[1] (caller frees
 * both); one that cannot be read is NULL there and empty in the view, where it
 * locates nothing. */
struct cgroup_view cgroup_view_read(char *texts[2]);

/* The group this process is in, in one hierarchy: 0, or -errno. */
int cgroup_view_locate(const struct cgroup_view *v, int version, const char *controller,
                       char *dir, size_t len);

/* The version whose memory controller this machine uses (1 or 2), or 0; dir its
 * group there. */
int cgroup_view_memory_version(const struct cgroup_view *v, char *dir, size_t len);

/* True if the space-separated list has word. */
bool cgroup_has_word(const char *list, const char *word);

#endif
