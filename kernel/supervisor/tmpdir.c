/* tmpdir: make the kernel's private folders, and reap stale ones.
 *
 * Every private folder of this user's kernels lives in one folder of the
 * user's, TMPDIR/sandpit-user-<uid> (or /tmp's), mode 0700, which every worker
 * has covered by an empty tmpfs but for its own temporary folder
 * (sandbox/namespaces.c): a kernel whose workspace holds that folder (one
 * started in /tmp) still cannot list or read another kernel's folder, nor
 * plant anything in it. The per-user folder is made with mkdir and then
 * opened with O_NOFOLLOW, and used only if it is a folder of this user's with
 * no permission for anyone else: a link, or a folder another user made first,
 * is refused, and then XDG_RUNTIME_DIR/sandpit-user-<uid> is tried.
 *
 * A kernel killed outright (SIGKILL, a crash) cannot remove its own folders.
 * A folder's name holds the pid of the kernel that made it, so the next
 * kernel removes those whose process is gone, with tfile_remove_tree on the
 * per-user folder's descriptor: what a cell left inside (links, FIFOs, a tree
 * swapped with a link) is removed itself, never followed. A pid that is
 * alive, or that cannot be checked, keeps its folder: a folder is never taken
 * from a running kernel. */
#include "kernel/supervisor/tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "sandbox/sandbox.h"
#include "sandbox/stop.h"
#include "sandbox/tfile.h"

/* Opens (making it if missing) parent/sandpit-user-<uid>, a folder of ours with
 * mode 0700; its path in out. The descriptor, or -errno. */
static int open_base_in(const char *parent, char *out, size_t len)
{
    if (sandbox_private_root(parent, out, len) != 0)
        return -EINVAL;
    int fd = tfile_private_dir(out, false);
    if (fd == -EPERM)
        log_warn("%s is not a private folder of this user's (another owns it, or it "
                 "gives others a right): not used",
                 out);
    return fd;
}

int tmpdir_base(char *out, size_t len)
{
    const char *env = getenv("TMPDIR");
    int fd = open_base_in(env && *env == '/' ? env : "/tmp", out, len);
    if (fd < 0 && env && *env == '/')
        fd = open_base_in("/tmp", out, len);
    if (fd < 0)
        fd = open_base_in(getenv("XDG_RUNTIME_DIR"), out, len);
    return fd;
}

static void remove_stale(int base, const char *base_path)
{
    int fd = dup(base);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!sandbox_stop_left_behind(e->d_name))
            continue;
        log_info("removing %s/%s, left by a kernel that ended without cleaning up",
                 base_path, e->d_name);
        int rc = tfile_remove_tree(dirfd(d), e->d_name);
        if (rc < 0)
            log_warn("cannot remove all of %s/%s: %s", base_path, e->d_name,
                     tfile_strerror(rc));
    }
    closedir(d);
}

/* Makes base/sandpit-<pid>-<infix><random>, mode 0700; *out its path (new). */
static int make_named(int base, const char *base_path, const char *infix, char **out)
{
    *out = NULL;
    char name[96], path[PATH_MAX];
    for (int tries = 0; tries < 8; tries++) {
        uint32_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            return -EIO;
        snprintf(name, sizeof name, "sandpit-%d-%s%08x", (int)getpid(), infix,
                 (unsigned)r);
        if (snprintf(path, sizeof path, "%s/%s", base_path, name) >= (int)sizeof path)
            return -ENAMETOOLONG;
        if (mkdirat(base, name, 0700) == 0) {
            *out = strdup(path);
            return *out ? 0 : -ENOMEM;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* Makes the other folders a kernel of this user could keep its private
 * folders in (one started with another TMPDIR), so that every worker covers
 * them: otherwise a cell whose workspace holds /tmp could make one first and
 * read what a later kernel keeps there. */
static void make_other_bases(void)
{
    const char *parents[] = {"/tmp", getenv("XDG_RUNTIME_DIR")};
    for (size_t i = 0; i < sizeof parents / sizeof *parents; i++) {
        char path[PATH_MAX];
        int fd = parents[i] ? open_base_in(parents[i], path, sizeof path) : -1;
        if (fd >= 0)
            close(fd);
    }
}

int tmpdir_make(char **out)
{
    make_other_bases();
    char base_path[PATH_MAX];
    int base = tmpdir_base(base_path, sizeof base_path);
    if (base < 0) {
        *out = NULL;
        return base;
    }
    int rc = make_named(base, base_path, "", out);
    if (!rc)
        remove_stale(base, base_path);
    close(base);
    return rc;
}

int tmpdir_make_private(const char *what, char **out)
{
    char infix[32];
    size_t n = strlen(what);
    *out = NULL;
    if (!n || n > sizeof infix - 2 || strspn(what, "abcdefghijklmnopqrstuvwxyz") != n)
        return -EINVAL;
    snprintf(infix, sizeof infix, "%s-", what);
    char base_path[PATH_MAX];
    int base = tmpdir_base(base_path, sizeof base_path);
    if (base < 0)
        return base;
    int rc = make_named(base, base_path, infix, out);
    close(base);
    return rc;
}

void tmpdir_remove(const char *path)
{
    tfile_remove_path(path);
}
