/* Namespaces: a user namespace, an empty network namespace and a mount namespace.
 *
 * The user namespace is what lets an unprivileged worker make the other two, and it
 * means that whatever capabilities the worker holds afterwards hold only over objects
 * that namespace owns (its network and mount namespaces), never over the machine. The
 * current uid and gid are mapped to themselves, so files written in the workspace keep
 * their owner. A user namespace cannot be left once entered, and on some machines
 * unshare() succeeds but writing the maps does not (Ubuntu's AppArmor restriction), so
 * the combination is first tried in a throwaway child.
 *
 * A new IPC namespace holds the worker's SysV IPC objects (see below).
 *
 * The network namespace is new and empty: a loopback interface that is down, so every
 * connect() fails with "network is unreachable", even to 127.0.0.1.
 *
 * The mount namespace exists because Landlock (up to ABI 7) does not govern chmod,
 * chown, utime or setxattr: a worker running as root could otherwise `chmod u+s` any
 * root-owned program or make /etc/shadow world-readable. Here every mount is made
 * read-only (EROFS for all of those), except bind mounts of the read-write paths, and
 * each hidden path is covered: a folder by an empty read-only tmpfs, a file by an empty
 * file without permissions (opening it is refused), bound read-only.
 * Propagation is made private first, so nothing done here reaches the parent namespace.
 *
 * Where a memory limit is asked for but no cgroup counts tmpfs pages, a temporary folder
 * on tmpfs (a /tmp in memory, as on many distributions) would let a cell fill memory
 * that no limit sees: the worker then gets a private tmpfs there instead, a quarter of
 * the limit in size. /dev/shm is read-only like every other mount.
 *
 * Without user namespaces, real root can still make the network and mount namespaces;
 * anyone else gets "unavailable" with the reason.
 */
#include "sandbox/internal.h"
#include "sandbox/kfile.h"
#include "sandbox/tfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_maps(uid_t uid, gid_t gid)
{
    char line[64];
    int rc = kfile_write_text("/proc/self/setgroups", "deny");
    if (rc < 0 && rc != -ENOENT) /* before Linux 3.19 there is no such file */
        return rc;
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if ((rc = kfile_write_text("/proc/self/uid_map", line)) < 0)
        return rc;
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    return kfile_write_text("/proc/self/gid_map", line);
}

/* What went wrong in a trial: the step and its errno. */
struct trial {
    int err;       /* 0: it worked */
    bool unshared; /* the failure came after unshare(), while writing the maps */
};

/* The namespaces a policy enters, but for the user namespace. */
static int wanted(bool network)
{
    return CLONE_NEWNS | (network ? 0 : CLONE_NEWNET);
}

/* Forks the child that tries unshare(flags) and, with CLONE_NEWUSER, the maps. */
static void trial_start(struct sandbox_trial *t, int flags)
{
    *t = (struct sandbox_trial){0, -1, flags, 0, false, false};
    uid_t uid = geteuid();
    gid_t gid = getegid();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *t = (struct sandbox_trial){0, -1, 0, errno, false, true};
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *t = (struct sandbox_trial){0, -1, 0, errno, false, true};
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        struct trial c = {0, false};
        if (unshare(flags) < 0)
            c.err = errno;
        else if (flags & CLONE_NEWUSER) {
            int rc = write_maps(uid, gid);
            c = (struct trial){-rc, rc < 0};
        }
        _exit(write(fds[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fds[1]);
    t->pid = pid;
    t->fd = fds[0];
}

void sandbox_trial_start(struct sandbox_trial *t, bool network)
{
    trial_start(t, CLONE_NEWUSER | wanted(network));
}

void sandbox_trial_finish(struct sandbox_trial *t)
{
    if (t->done)
        return;
    struct trial got = {ECHILD, false};
    ssize_t n;
    while ((n = read(t->fd, &got, sizeof got)) < 0 && errno == EINTR)
        ;
    close(t->fd);
    int status;
    while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof got)
        got = (struct trial){ECHILD, false};
    *t = (struct sandbox_trial){0, -1, t->flags, got.err, got.unshared, true};
}

/* Tries unshare(flags) and, with CLONE_NEWUSER, the maps, in a child that then exits;
 * flags are CLONE_NEWUSER with some of wanted()'s. */
static struct trial try_unshare(int flags)
{
    struct sandbox_trial t;
    trial_start(&t, flags);
    sandbox_trial_finish(&t);
    return (struct trial){t.err, t.unshared};
}

static bool sysctl_is(const char *path, const char *value)
{
    char buf[16] = "";
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool same = fgets(buf, sizeof buf, f) && strncmp(buf, value, strlen(value)) == 0;
    fclose(f);
    return same;
}

/* Why a user namespace could not be made, in a few words. */
static void userns_reason(struct trial t, char *buf, size_t size)
{
    if (t.unshared && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
        snprintf(buf, size,
                 "cannot write the uid/gid maps: %s (the process is not "
                 "dumpable: it changed uid without an execve)",
                 strerror(t.err));
    else if (t.unshared)
        snprintf(buf, size,
                 "cannot write the uid/gid maps: %s (an LSM such as AppArmor "
                 "restricts user namespaces?)",
                 strerror(t.err));
    else if (t.err == EPERM &&
             sysctl_is("/proc/sys/kernel/unprivileged_userns_clone", "0"))
        snprintf(buf, size, "kernel.unprivileged_userns_clone is 0");
    else if (t.err == EPERM &&
             sysctl_is("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"))
        snprintf(buf, size, "AppArmor restricts unprivileged user namespaces");
    else if (t.err == EPERM)
        snprintf(buf, size,
                 "unshare(CLONE_NEWUSER): %s (a container or seccomp profile "
                 "forbids it)",
                 strerror(t.err));
    else if (t.err == ENOSPC)
        snprintf(buf, size, "user.max_user_namespaces is 0 or reached");
    else if (t.err == EINVAL)
        snprintf(buf, size,
                 "unshare(CLONE_NEWUSER): %s (no user namespaces in this "
                 "kernel, or chrooted)",
                 strerror(t.err));
    else
        snprintf(buf, size, "unshare(CLONE_NEWUSER): %s", strerror(t.err));
}

/* Checks that the network namespace holds only a loopback that is down. */
static void check_network(struct sandbox_layer *net, const char *how)
{
    struct if_nameindex *ifs = if_nameindex();
    if (!ifs) {
        sandbox__layer_set(net, SANDBOX_ACTIVE, "empty%s (could not list interfaces: %s)",
                           how, strerror(errno));
        return;
    }
    char others[96] = "";
    bool lo_up = false;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (struct if_nameindex *i = ifs; i->if_index; i++) {
        if (strcmp(i->if_name, "lo") != 0) {
            size_t len = strlen(others);
            snprintf(others + len, sizeof others - len, "%s%s", len ? " " : "",
                     i->if_name);
            continue;
        }
        struct ifreq req;
        memset(&req, 0, sizeof req);
        snprintf(req.ifr_name, sizeof req.ifr_name, "%s", i->if_name);
        if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP))
            lo_up = true;
    }
    if (s >= 0)
        close(s);
    if_freenameindex(ifs);
    if (others[0] || lo_up)
        sandbox__layer_set(net, SANDBOX_FAILED, "new namespace is not empty: %s%s",
                           others, lo_up ? " lo is up" : "");
    else
        sandbox__layer_set(net, SANDBOX_ACTIVE, "empty: only a loopback, down%s", how);
}

/* Covers one hidden path; returns 0, or -errno with a note in mnt. */
static int cover(const char *path, struct sandbox_layer *mnt, bool can_setattr,
                 const char *cover_with)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        int rc = -errno;
        if (rc == -ENOENT)
            return 0; /* nothing to hide */
        sandbox__layer_note(mnt, "cannot hide %s: %s", path, strerror(-rc));
        return rc;
    }
    int rc = 0;
    if (S_ISDIR(st.st_mode)) {
        if (mount("none", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,mode=000") < 0)
            rc = -errno;
    } else {
        /* Read-only if possible, so the cover's mode cannot be changed back. */
        if (mount(cover_with ? cover_with : "/dev/null", path, NULL, MS_BIND, NULL) < 0)
            rc = -errno;
        else if (can_setattr)
            sandbox__mount_rdonly(path, true, false);
    }
    if (rc < 0)
        sandbox__layer_note(mnt, "cannot hide %s: %s", path, strerror(-rc));
    return rc;
}

/* The read-write paths of the policy, in order; returns how many (at most max). */
static size_t rw_list(const struct sandbox_policy *p, const char **out, size_t max)
{
    size_t n = 0;
    if (p->workspace && n < max)
        out[n++] = p->workspace;
    if (p->tmpdir && n < max)
        out[n++] = p->tmpdir;
    for (const char *const *s = p->rw_paths; s && *s && n < max; s++)
        out[n++] = *s;
    return n;
}

static bool on_tmpfs(const char *path)
{
    struct statfs st;
    return statfs(path, &st) == 0 && st.f_type == TMPFS_MAGIC;
}

/* Mounts a private tmpfs of a quarter of the memory limit (at least 16 MiB) on dir. */
static int small_tmpfs_on(const char *dir, const struct sandbox_policy *p)
{
    char opts[64];
    unsigned long long size = p->memory_bytes / 4;
    if (size < (16ull << 20))
        size = 16ull << 20;
    snprintf(opts, sizeof opts, "size=%llu,mode=0700", size);
    return mount("sandpit-tmp", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ? -errno
                                                                              : 0;
}

/* What setup_mounts' phases hand each other, and the report. */
enum { MAX_RW = 64 };
struct mounts {
    const char *rw[MAX_RW + 1]; /* the read-write paths (rw_list) */
    bool bound[MAX_RW];         /* which of them are bound (or a small tmpfs) */
    size_t n_rw, n_bound;
    int ro_rc;        /* "/" made read-only: 0, or why not */
    bool can_setattr; /* ro_rc == 0: mount_setattr works here */
    char masked[SANDBOX_DETAIL_MAX], locked[SANDBOX_DETAIL_MAX]; /* home.h's */
    size_t hidden;                                               /* paths covered */
    char hidden_list[SANDBOX_DETAIL_MAX];
    int hide_rc; /* the first cover that failed, or 0 */
};

/* Phase 1. Private first: otherwise, in a namespace made by real root, the mounts
 * below would propagate to the host. If that fails, nothing else may be mounted. */
static int mounts_make_private(struct sandbox_layer *mnt)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        int rc = -errno;
        sandbox__layer_set(mnt, SANDBOX_FAILED, "cannot make mounts private: %s",
                           strerror(-rc));
        return rc;
    }
    return 0;
}

/* Phase 2. Each read-write path bound on itself (or, for a temporary folder on
 * tmpfs when small_tmpfs, a small private tmpfs), so that it can be made
 * writable again once everything is read-only. */
static void mounts_bind_rw(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                           bool small_tmpfs, struct mounts *m)
{
    m->n_rw = rw_list(p, m->rw, MAX_RW + 1);
    if (m->n_rw > MAX_RW) {
        sandbox__layer_note(mnt, "only the first %d read-write paths are writable",
                            MAX_RW);
        m->n_rw = MAX_RW;
    }
    for (size_t i = 0; i < m->n_rw; i++) {
        const char *rw = m->rw[i];
        if (small_tmpfs && rw == p->tmpdir && on_tmpfs(rw)) {
            int rc = small_tmpfs_on(rw, p);
            if (rc == 0) {
                m->bound[i] = true;
                m->n_bound++;
                sandbox__layer_note(mnt, "a small private tmpfs on %s", rw);
                continue;
            }
            sandbox__layer_note(mnt, "cannot limit the tmpfs %s: %s", rw, strerror(-rc));
        } else if (small_tmpfs && on_tmpfs(rw)) {
            sandbox__layer_note(mnt,
                                "%s is on tmpfs: files there are memory no limit "
                                "counts",
                                rw);
        }
        if (mount(rw, rw, NULL, MS_BIND | MS_REC, NULL) == 0) {
            m->bound[i] = true;
            m->n_bound++;
        } else {
            sandbox__layer_note(mnt, "skipped %s: %s", rw, strerror(errno));
        }
    }
}

/* Phase 3. Read-only everywhere, then the bound read-write paths writable again. */
static void mounts_read_only(struct sandbox_layer *mnt, struct mounts *m)
{
    m->ro_rc = sandbox__mount_rdonly("/", true, true);
    m->can_setattr = m->ro_rc == 0;
    if (!m->can_setattr)
        return;
    for (size_t i = 0; i < m->n_rw; i++) {
        int rc = m->bound[i] ? sandbox__mount_rdonly(m->rw[i], false, true) : 0;
        if (rc < 0)
            sandbox__layer_note(mnt, "%s stays read-only: %s", m->rw[i], strerror(-rc));
    }
}

/* Phase 4. What of the user's setup lies in the read-write paths, read-only
 * (home.h); only where mounts can be made read-only at all. */
static void mounts_mask_setup(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                              struct mounts *m)
{
    if (m->can_setattr)
        sandbox__masks_mount(p, mnt, m->masked, m->locked, sizeof m->masked);
}

/* Phase 5. Each hidden path covered (a file by the cover file, a folder by an empty
 * tmpfs), then the kernels' private folders but the worker's own (private.c). */
static void mounts_hide(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                        struct mounts *m)
{
    char cover_buf[PATH_MAX];
    struct tfile_new cover_new = {.fd = -1, .dirfd = -1};
    const char *cover_with =
        p->hidden_paths && *p->hidden_paths
            ? sandbox__cover_file(p, cover_buf, sizeof cover_buf, &cover_new)
            : NULL;
    for (const char *const *h = p->hidden_paths; h && *h; h++) {
        struct stat st;
        if (stat(*h, &st) < 0)
            continue; /* nothing to hide */
        int c = cover(*h, mnt, m->can_setattr, cover_with);
        if (c < 0 && m->hide_rc == 0)
            m->hide_rc = c;
        if (c == 0) {
            m->hidden++;
            sandbox__list_path(m->hidden_list, sizeof m->hidden_list, *h, p->workspace);
        }
    }
    tfile_abort(&cover_new); /* the binds keep it; the user's folder does not */
    int priv = sandbox__hide_private_root(p, mnt);
    if (priv < 0 && m->hide_rc == 0)
        m->hide_rc = priv;
}

/* Phase 7. The layer's state and detail, the notes of the phases after it. */
static void mounts_report(struct sandbox_layer *mnt, const struct mounts *m)
{
    char notes[SANDBOX_DETAIL_MAX];
    snprintf(notes, sizeof notes, "%s", mnt->detail);
    if (!m->can_setattr) {
        int rc = m->ro_rc;
        enum sandbox_state s = rc == -ENOSYS ? SANDBOX_UNAVAILABLE : SANDBOX_FAILED;
        sandbox__layer_set(mnt, s, "cannot make mounts read-only: %s%s", strerror(-rc),
                           rc == -ENOSYS ? " (mount_setattr needs Linux 5.12)" : "");
    } else {
        sandbox__layer_set(mnt, SANDBOX_ACTIVE,
                           "read-only but for %zu read-write path%s, %zu hidden",
                           m->n_bound, m->n_bound == 1 ? "" : "s", m->hidden);
        if (m->hidden_list[0])
            sandbox__layer_note(mnt, "hidden: %s", m->hidden_list);
        if (m->locked[0])
            sandbox__layer_note(mnt,
                                "home folder with its top level and dot-files "
                                "read-only: %s",
                                m->locked);
        if (m->masked[0])
            sandbox__layer_note(mnt, "read-only in the workspace (.): %s", m->masked);
    }
    if (notes[0])
        sandbox__layer_note(mnt, "%s", notes);
}

/* In a fresh mount namespace: read-only everywhere but the read-write binds, and the
 * hidden paths covered. The phases, in this order: private, binds, read-only, masks,
 * covers, back to the working folder, the report. */
static int setup_mounts(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                        bool small_tmpfs)
{
    int rc = mounts_make_private(mnt);
    if (rc < 0)
        return rc;
    char cwd[PATH_MAX];
    bool have_cwd = getcwd(cwd, sizeof cwd) != NULL;
    struct mounts m = {0};
    mnt->detail[0] = '\0';
    mounts_bind_rw(p, mnt, small_tmpfs, &m);
    mounts_read_only(mnt, &m);
    mounts_mask_setup(p, mnt, &m);
    mounts_hide(p, mnt, &m);
    /* Phase 6: the old working folder may lie under a new bind. */
    if (have_cwd && chdir(cwd) < 0)
        sandbox__layer_note(mnt, "cannot return to %s: %s", cwd, strerror(errno));
    mounts_report(mnt, &m);
    if (m.hide_rc < 0) {
        mnt->state = SANDBOX_FAILED;
        return m.hide_rc;
    }
    return mnt->state == SANDBOX_FAILED ? m.ro_rc : 0;
}

/* Why each namespace could not be entered, for the report. */
struct why_not {
    char user[160], net[96], mnt[96];
};

/* Which namespaces to enter: the trial's answer for all of them (started early, if
 * it tried what this policy enters: sandbox.h), else, when a user namespace alone
 * works, which of the others do. *want loses what does not work; the trial returned
 * is the user namespace's. */
static struct trial choose_namespaces(const struct sandbox_policy *p, int *want,
                                      struct why_not *why)
{
    struct trial t;
    if (p->trial && p->trial->flags == (CLONE_NEWUSER | *want)) {
        sandbox_trial_finish(p->trial);
        t = (struct trial){p->trial->err, p->trial->unshared};
    } else {
        t = try_unshare(CLONE_NEWUSER | *want);
    }
    if (t.err == 0)
        return t;
    struct trial alone = try_unshare(CLONE_NEWUSER);
    if (alone.err != 0) {
        userns_reason(alone, why->user, sizeof why->user);
        return t;
    }
    /* A user namespace alone works: find out which of the others does not. */
    *want = 0;
    struct trial m = try_unshare(CLONE_NEWUSER | CLONE_NEWNS);
    if (m.err == 0)
        *want |= CLONE_NEWNS;
    else
        snprintf(why->mnt, sizeof why->mnt, "unshare(CLONE_NEWNS): %s", strerror(m.err));
    if (!p->network) {
        struct trial n = try_unshare(CLONE_NEWUSER | CLONE_NEWNET);
        if (n.err == 0)
            *want |= CLONE_NEWNET;
        else
            snprintf(why->net, sizeof why->net, "unshare(CLONE_NEWNET): %s",
                     strerror(n.err));
    }
    return alone;
}

/* Enters a user namespace with want, its maps written. 0, or -errno with the layer
 * FAILED: the worker must not go on. */
static int enter_user_namespace(struct sandbox_layer *user, int want, uid_t uid,
                                gid_t gid)
{
    if (unshare(CLONE_NEWUSER | want) < 0) {
        int rc = -errno;
        sandbox__layer_set(user, SANDBOX_FAILED, "unshare: %s (it worked in a trial)",
                           strerror(-rc));
        return rc;
    }
    int rc = write_maps(uid, gid);
    if (rc < 0) {
        /* Stuck in a namespace without a mapping: the worker must not go on. */
        sandbox__layer_set(user, SANDBOX_FAILED, "cannot write the uid/gid maps: %s",
                           strerror(-rc));
        return rc;
    }
    sandbox__layer_set(user, SANDBOX_ACTIVE,
                       "uid %u and gid %u mapped to themselves; no capability over the "
                       "machine",
                       (unsigned)uid, (unsigned)gid);
    return 0;
}

/* Without a user namespace: real root does not need one for the other two; anyone
 * else gets neither. The namespaces entered; *how says "as root" where it applies. */
static int enter_without_user_namespace(struct sandbox_layer *user, int want, uid_t uid,
                                        struct why_not *why, const char **how)
{
    int flags = 0;
    sandbox__layer_set(user, SANDBOX_UNAVAILABLE, "%s", why->user);
    if (uid != 0) {
        snprintf(why->net, sizeof why->net, "needs a user namespace");
        snprintf(why->mnt, sizeof why->mnt, "needs a user namespace");
        return 0;
    }
    if (want & CLONE_NEWNET && unshare(CLONE_NEWNET) == 0)
        flags |= CLONE_NEWNET;
    else if (want & CLONE_NEWNET)
        snprintf(why->net, sizeof why->net, "unshare(CLONE_NEWNET): %s", strerror(errno));
    if (unshare(CLONE_NEWNS) == 0)
        flags |= CLONE_NEWNS;
    else
        snprintf(why->mnt, sizeof why->mnt, "unshare(CLONE_NEWNS): %s", strerror(errno));
    *how = " (as root, without a user namespace)";
    return flags;
}

int sandbox__namespaces_enter(const struct sandbox_policy *p, struct sandbox_layer *user,
                              struct sandbox_layer *net, struct sandbox_layer *mnt,
                              bool small_tmpfs)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    int want = wanted(p->network);
    int flags = 0; /* what was unshared */
    struct why_not why = {"", "", ""};
    const char *how = "";

    struct trial t = choose_namespaces(p, &want, &why);
    if (t.err == 0) {
        int rc = enter_user_namespace(user, want, uid, gid);
        if (rc < 0)
            return rc;
        flags = CLONE_NEWUSER | want;
    } else {
        flags = enter_without_user_namespace(user, want, uid, &why, &how);
    }

    /* SysV shared memory, semaphores and message queues of its own: a segment made by
     * a cell goes with the worker instead of outliving it, and no segment of another
     * process (a database's, as root) can be attached. */
    if (flags & CLONE_NEWUSER || uid == 0) {
        if (unshare(CLONE_NEWIPC) == 0)
            sandbox__layer_note(user, "an IPC namespace of its own");
        else
            sandbox__layer_note(user, "no IPC namespace: %s", strerror(errno));
    }

    if (p->network)
        sandbox__layer_set(net, SANDBOX_DISABLED, "network on: the host's network");
    else if (flags & CLONE_NEWNET)
        check_network(net, how);
    else
        sandbox__layer_set(net, SANDBOX_UNAVAILABLE, "%s", why.net);

    int rc = 0;
    if (flags & CLONE_NEWNS)
        rc = setup_mounts(p, mnt, small_tmpfs);
    else
        sandbox__layer_set(mnt, SANDBOX_UNAVAILABLE, "%s", why.mnt);
    if (net->state == SANDBOX_FAILED && rc == 0)
        rc = -EIO;
    return rc;
}

/* True if path can be read from here: a regular file that opens, or a folder that lists
 * something. A cover (/dev/null, an empty tmpfs) or a denial is not. */
static bool readable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    bool exposed = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        exposed = true;
    } else if (S_ISDIR(st.st_mode)) {
        DIR *d = fdopendir(fd);
        if (d) {
            struct dirent *e;
            while (!exposed && (e = readdir(d)))
                exposed = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
            closedir(d);
            return exposed;
        }
    }
    close(fd);
    return exposed;
}

int sandbox__hidden_check(const struct sandbox_policy *p, struct sandbox_layer *l,
                          bool can_hide)
{
    int rc = 0;
    for (const char *const *h = p->hidden_paths; h && *h; h++) {
        if (!readable(*h))
            continue;
        if (!can_hide) {
            /* Neither a mount namespace nor Landlock on this machine: nothing
             * can hide the file, and the report says so rather than refusing to
             * run at all (the sandbox degrades, it does not pretend). */
            sandbox__layer_note(l, "%s cannot be hidden on this machine", *h);
            continue;
        }
        if (rc == 0)
            l->state = SANDBOX_FAILED;
        sandbox__layer_note(l, "%s is still readable", *h);
        rc = -EACCES;
    }
    return rc;
}
