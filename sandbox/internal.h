/* sandbox internals: one function per layer, called in order by sandbox.c and one at a
 * time by the unit tests, which check each layer on its own. Same rules as sandbox.h:
 * the policy is borrowed and a layer is filled in place. Each returns 0 when its layer
 * ends ACTIVE, UNAVAILABLE or DISABLED, and -errno when it ends FAILED.
 */
#ifndef SANDPIT_SANDBOX_INTERNAL_H
#define SANDPIT_SANDBOX_INTERNAL_H

#include "sandbox/sandbox.h"

#include <stdarg.h>

struct sandbox_cgroup;
struct sandbox_cgroup_limits;

/* report.c: what a layer writes into its part of the report. */

/* Sets the state and replaces the detail. */
void sandbox__layer_set(struct sandbox_layer *l, enum sandbox_state s, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
/* Appends "; <text>" to the detail (truncated with "..." when it does not fit). */
void sandbox__layer_note(struct sandbox_layer *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "1 GiB", "100 MiB", "4096 bytes": the largest unit that divides n exactly. */
void sandbox__format_size(char *buf, size_t size, uint64_t n);

/* Which cgroup this process is in and what it limits; *memory_counted tells whether a
 * memory limit counts shared memory and tmpfs. Never FAILED: without a group of its
 * own the layer is UNAVAILABLE, with p->cgroup_note as the reason. */
int sandbox__cgroup_check(const struct sandbox_policy *p, struct sandbox_layer *l,
                          bool *memory_counted);
/* sandbox__cgroup_check as seen through the given texts of /proc/self/cgroup and
 * /proc/self/mountinfo (borrowed), which say where the hierarchy lies: the unit tests
 * point them at a folder laid out like a cgroup mount. */
int sandbox__cgroup_check_in(const struct sandbox_policy *p, struct sandbox_layer *l,
                             bool *memory_counted, const char *self,
                             const char *mountinfo);
/* sandbox_cgroup_create (cgroup.h) through the given texts, as above. */
int sandbox__cgroup_create_in(struct sandbox_cgroup *cg, unsigned seq,
                              const struct sandbox_cgroup_limits *lim, const char *self,
                              const char *mountinfo);
/* The folder of the group this process is in, from the texts of /proc/self/cgroup and
 * /proc/self/mountinfo: version 1 with a controller ("memory"), or version 2. 0, or
 * -ENOENT when the hierarchy is not there, or not mounted where this process sees it. */
int sandbox__cgroup_locate(const char *self, const char *mountinfo, int version,
                           const char *controller, char *dir, size_t len);

/* RLIMIT_DATA, FSIZE, NOFILE, CORE, RTPRIO, soft and hard. */
int sandbox__rlimits_apply(const struct sandbox_policy *p, struct sandbox_layer *l);
/* RLIMIT_NPROC = SANDBOX_MAX_TASKS when own_userns (there it counts the worker's own
 * tasks); otherwise a note on why it is left alone. */
int sandbox__rlimits_limit_tasks(struct sandbox_layer *l, bool own_userns);

/* unshare(CLONE_NEWUSER | CLONE_NEWNS [| CLONE_NEWNET]), the uid/gid maps, then the
 * read-only mounts, the read-write binds and the covers of hidden paths. With
 * small_tmpfs (a memory limit no cgroup enforces), a temporary folder on tmpfs is
 * replaced by a private tmpfs of a quarter of the limit. */
int sandbox__namespaces_enter(const struct sandbox_policy *p, struct sandbox_layer *user,
                              struct sandbox_layer *net, struct sandbox_layer *mnt,
                              bool small_tmpfs);

/* mounts.c, for namespaces.c and masks.c: "./x" or "~/x" appended to a list for
 * the report; mount_setattr(MOUNT_ATTR_RDONLY) set or cleared on path. */
void sandbox__list_path(char *list, size_t size, const char *path, const char *workspace);
int sandbox__mount_rdonly(const char *path, bool rdonly, bool recursive);

/* masks.c: in the worker's mount namespace, once every mount is read-only but the
 * read-write paths: the top of each home_dirs locked, the folders between a read-write
 * path and each readonly or hidden path inside it pinned (bound on themselves, so that
 * no cell can rename them and move what they hold), then each readonly_paths bound
 * read-only. Appends to the report's lists masked and locked (size bytes each). */
void sandbox__masks_mount(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                          char *masked, char *locked, size_t size);

/* Empties the bounding, ambient, inheritable, permitted and effective sets. */
int sandbox__caps_drop(struct sandbox_layer *l);

/* no_new_privs, then a Landlock ruleset for p; *abi gets the running ABI (0: none). */
int sandbox__landlock_apply(const struct sandbox_policy *p, struct sandbox_layer *l,
                            int *abi);

/* private.c: what of the mount set-up lies in folders the worker can write.
 * An empty file without permissions, made by tfile under a fresh name in
 * p->tmpdir, to bind over hidden files; its path in buf and *t holding it
 * (tfile_abort removes it once bound), or NULL to fall back on /dev/null. */
struct tfile_new;
const char *sandbox__cover_file(const struct sandbox_policy *p, char *buf, size_t len,
                                struct tfile_new *t);
/* Covers p->private_root with an empty read-only tmpfs, but for p->tmpdir (one
 * of its folders), bound back in place. 0 (nothing to do included), or -errno
 * with a note in mnt. */
int sandbox__hide_private_root(const struct sandbox_policy *p, struct sandbox_layer *mnt);

/* Checks that no p->hidden_paths can be read from here; notes any that can in l. When
 * can_hide (the mount namespace is in force), one that can is a failure (FAILED,
 * -EACCES); otherwise a gap that the note states. Run after every stage-1 layer. */
int sandbox__hidden_check(const struct sandbox_policy *p, struct sandbox_layer *l,
                          bool can_hide);

/* no_new_privs, then the seccomp filters (see seccomp.c), synchronised to all threads;
 * with no_shared_anon, anonymous shared mappings are refused too. */
int sandbox__seccomp_apply(const struct sandbox_policy *p, struct sandbox_layer *l,
                           bool no_shared_anon);

#endif
