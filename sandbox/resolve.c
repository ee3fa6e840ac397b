/* resolve: where a protected path really is, made if it is missing.
 *
 * A path the sandbox keeps read-only or hidden (a PYTHONPATH entry, IPYTHONDIR,
 * JUPYTER_CONFIG_DIR, PYTHONSTARTUP, a runtime folder) is only protected if it exists
 * when the mounts are made: a missing one inside the workspace could be made by a
 * cell, and the next worker (or the user's next Jupyter program) would then run what
 * the cell put there. So the worker, before it confines itself and before any cell,
 * makes each missing one empty, and the mount namespace then binds it like any other.
 *
 * The hard part is that the workspace is the cell's: any folder or link in it may have
 * been planted. The walk therefore goes one component at a time from "/", each opened
 * relative to the last with O_NOFOLLOW, never by path; a missing component is made
 * with mkdirat (or, for the last one of a file, openat O_CREAT | O_EXCL) in the folder
 * just opened. A symbolic link outside the writable paths is the user's and is
 * followed; one inside them could be turned by a cell to another folder between two
 * workers, so the walk refuses it (-ELOOP) and the kernel says why.
 */
#include "sandbox/home.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESOLVE_MAX_LINKS 40

bool sandbox_path_beneath(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

bool sandbox_path_in_rw(const struct sandbox_policy *p, const char *path)
{
    if (p->workspace && sandbox_path_beneath(path, p->workspace))
        return true;
    if (p->tmpdir && sandbox_path_beneath(path, p->tmpdir))
        return true;
    for (const char *const *s = p->rw_paths; s && *s; s++)
        if (sandbox_path_beneath(path, *s))
            return true;
    return false;
}

bool sandbox_path_writable(const struct sandbox_policy *p, const char *const *homes,
                           const char *dir)
{
    /* The top of a home folder and its dot-entries are read-only (home.h). */
    for (const char *const *h = homes; h && *h; h++)
        if (sandbox_path_beneath(dir, *h) &&
            (dir[strlen(*h)] == 0 || dir[strlen(*h) + 1] == '.'))
            return false;
    return sandbox_path_in_rw(p, dir);
}

/* The walk: the folder reached so far, by descriptor and by real path. */
struct walk {
    int fd;
    char real[PATH_MAX];
    char rest[PATH_MAX]; /* what is left to walk */
    int links;
};

static int walk_reset(struct walk *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(w->real, sizeof w->real, "/");
    return w->fd < 0 ? -errno : 0;
}

static int walk_enter(struct walk *w, const char *name)
{
    int fd = openat(w->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    close(w->fd);
    w->fd = fd;
    if (strcmp(name, "..") == 0) {
        char *slash = strrchr(w->real, '/');
        if (slash && slash != w->real)
            *slash = 0;
        else
            snprintf(w->real, sizeof w->real, "/");
        return 0;
    }
    size_t n = strlen(w->real);
    if (snprintf(w->real + n, sizeof w->real - n, "%s%s", n > 1 ? "/" : "", name) >=
        (int)(sizeof w->real - n))
        return -ENAMETOOLONG;
    return 0;
}

/* A link outside the writable paths: what it names is walked instead of it. */
static int walk_link(struct walk *w, const char *name)
{
    char target[PATH_MAX], rest[PATH_MAX];
    if (++w->links > RESOLVE_MAX_LINKS)
        return -ELOOP;
    ssize_t n = readlinkat(w->fd, name, target, sizeof target - 1);
    if (n < 0)
        return -errno;
    target[n] = 0;
    if (snprintf(rest, sizeof rest, "%s%s%s", target, w->rest[0] ? "/" : "", w->rest) >=
        (int)sizeof rest)
        return -ENAMETOOLONG;
    memcpy(w->rest, rest, sizeof rest);
    return target[0] == '/' ? walk_reset(w) : 0;
}

/* Makes the missing component name in the folder reached, as a folder (or, when it is
 * the last one and a file is wanted, an empty file). EEXIST: someone else made it. */
static int walk_make(struct walk *w, const char *name, bool file)
{
    if (file) {
        int fd = openat(w->fd, name,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                        0600);
        if (fd < 0)
            return errno == EEXIST ? 0 : -errno;
        close(fd);
        return 0;
    }
    return mkdirat(w->fd, name, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

/* One step of the walk: the next component of w->rest. */
static int walk_step(struct walk *w, const struct sandbox_policy *p,
                     const char *const *homes, enum sandbox_kind kind, bool *made)
{
    char name[NAME_MAX + 1];
    size_t n = strcspn(w->rest, "/");
    if (n > NAME_MAX)
        return -ENAMETOOLONG;
    memcpy(name, w->rest, n);
    name[n] = 0;
    memmove(w->rest, w->rest + n + (w->rest[n] == '/'), strlen(w->rest + n) + 1);
    if (!name[0] || strcmp(name, ".") == 0)
        return 0;
    if (strcmp(name, "..") == 0)
        return walk_enter(w, name);
    bool last = !w->rest[strspn(w->rest, "/.")];
    bool writable = sandbox_path_writable(p, homes, w->real);
    for (int tries = 0; tries < 2; tries++) {
        struct stat st;
        if (fstatat(w->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISLNK(st.st_mode))
                return writable ? -ELOOP : walk_link(w, name);
            if (S_ISDIR(st.st_mode))
                return walk_enter(w, name);
            if (!last)
                return -ENOTDIR;
            size_t len = strlen(w->real);
            return snprintf(w->real + len, sizeof w->real - len, "%s%s",
                            len > 1 ? "/" : "", name) >= (int)(sizeof w->real - len)
                       ? -ENAMETOOLONG
                       : 0;
        }
        if (errno != ENOENT)
            return -errno;
        if (kind == SANDBOX_KIND_ANY || !writable)
            return -ENOENT; /* nothing there, and no cell can make it */
        int rc = walk_make(w, name, last && kind == SANDBOX_KIND_FILE);
        if (rc < 0)
            return rc;
        *made = true;
    }
    return -EAGAIN;
}

int sandbox_resolve(const struct sandbox_policy *p, const char *const *homes,
                    const char *path, enum sandbox_kind kind, char *out, size_t len,
                    bool *made)
{
    struct walk w = {.fd = -1};
    *made = false;
    if (!path || path[0] != '/')
        return -EINVAL;
    if (snprintf(w.rest, sizeof w.rest, "%s", path + 1) >= (int)sizeof w.rest)
        return -ENAMETOOLONG;
    int rc = walk_reset(&w);
    for (int steps = 0; rc == 0 && w.rest[0]; steps++)
        rc = steps < 4096 ? walk_step(&w, p, homes, kind, made) : -ELOOP;
    if (w.fd >= 0)
        close(w.fd);
    if (rc == 0 && snprintf(out, len, "%s", w.real) >= (int)len)
        rc = -ENAMETOOLONG;
    return rc;
}
