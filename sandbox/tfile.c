/* tfile: opening, making and removing files beneath a folder descriptor,
 * never following a link.
 *
 * The hard part is that the worker runs at the same time as the trusted code
 * and can change the tree between any two of its steps: swap a folder and a
 * link with renameat2(RENAME_EXCHANGE), plant a link where a file is about to
 * be made, make a FIFO where a file is about to be read. So nothing here
 * checks a path and then uses it: each step acts on a descriptor it already
 * holds, and resolution happens in one system call that refuses links
 * (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS),
 * or, where the kernel lacks openat2, one component at a time with O_NOFOLLOW,
 * each from the descriptor of the folder before. What the worker can still do
 * is move the folder we hold elsewhere in its own reach: we then act on the
 * same folder under another name, never on one the worker cannot write.
 */
#include "sandbox/tfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* Folder entries removed by one tfile_remove_tree, at most: a bound on the
 * work, should something keep filling the tree while it is removed. */
#define TFILE_MAX_ENTRIES 1000000

static bool force_walk;
static bool no_openat2; /* ENOSYS seen once: walk from then on */

void tfile_force_walk(bool on)
{
    force_walk = on;
}

const char *tfile_strerror(int rc)
{
    switch (-rc) {
    case ELOOP:
        return "a symbolic link is in the way (links are not followed)";
    case EXDEV:
        return "the path leads out of its folder";
    case TFILE_EKIND:
        return "not a regular file or folder (a FIFO, a socket or a device is never "
               "used)";
    default:
        return strerror(-rc);
    }
}

/* Checks path's shape: relative, no "..", each component at most NAME_MAX. */
static int check_path(const char *path)
{
    if (!path)
        return -EINVAL;
    if (path[0] == '/')
        return -EXDEV;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return -EXDEV;
        if (n > NAME_MAX)
            return -ENAMETOOLONG;
        p += n;
        while (*p == '/')
            p++;
    }
    return strlen(path) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int with_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)flags,
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    for (int tries = 0; tries < 16; tries++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if (errno != EAGAIN && errno != EINTR)
            return -errno;
    }
    return -EAGAIN;
}

/* The walk: every folder on the way opened from the one before with
 * O_NOFOLLOW (a link is ELOOP or, with O_PATH, ENOTDIR), then the leaf. */
static int with_walk(int dirfd, const char *path, int flags, mode_t mode)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    int cur = -1; /* -1: dirfd itself, which is not ours to close */
    char *p = buf;
    for (;;) {
        while (*p == '/')
            p++;
        char *end = p + strcspn(p, "/");
        char *next = end;
        while (*next == '/')
            next++;
        bool last = *next == '\0';
        *end = '\0';
        const char *comp = *p ? p : ".";
        int base = cur >= 0 ? cur : dirfd;
        int fd;
        if (last)
            fd = openat(base, comp, flags | O_NOFOLLOW, mode);
        else
            fd = openat(base, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = fd < 0 ? -errno : 0;
        struct stat st;
        if (err == -ENOTDIR && fstatat(base, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            err = -ELOOP; /* O_NOFOLLOW with O_DIRECTORY: a link is "not a folder" */
        if (cur >= 0)
            close(cur);
        if (fd < 0)
            return err;
        if (last)
            return fd;
        cur = fd;
        p = next;
    }
}

/* Opens path beneath dirfd with flags (O_NONBLOCK | O_NOCTTY | O_CLOEXEC added),
 * never following a link. The descriptor, or -errno. */
static int open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
    int rc = check_path(path);
    if (rc < 0)
        return rc;
    if (!*path)
        path = ".";
    flags |= O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW;
    if (!force_walk && !no_openat2) {
        rc = with_openat2(dirfd, path, flags, mode);
        if (rc == -ENOSYS)
            no_openat2 = true;
        else if (rc != -ENOTDIR)
            return rc;
        /* ENOTDIR: a file, or a link, on the way; the walk, as safe, says which. */
    }
    return with_walk(dirfd, path, flags, mode);
}

/* Keeps fd if its file is of the type wanted (S_IFREG or S_IFDIR), else closes it. */
static int keep_if(int fd, mode_t type)
{
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    if ((st.st_mode & S_IFMT) != type) {
        close(fd);
        if (S_ISDIR(st.st_mode))
            return -EISDIR;
        return type == S_IFDIR && S_ISREG(st.st_mode) ? -ENOTDIR : -TFILE_EKIND;
    }
    return fd;
}

int tfile_open_root(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    return keep_if(fd < 0 ? -errno : fd, S_IFDIR);
}

int tfile_private_dir(const char *path, bool repair)
{
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -errno;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOTDIR ? -ELOOP : -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : st.st_uid != getuid() ? -EPERM : 0;
    if (!rc && (st.st_mode & 077))
        rc = !repair ? -EPERM : fchmod(fd, 0700) < 0 ? -errno : 0;
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

int tfile_open(int dirfd, const char *path, int flags)
{
    if (flags & (O_CREAT | O_DIRECTORY | O_PATH | O_TMPFILE))
        return -EINVAL;
    int fd = open_beneath(dirfd, path, flags, 0);
    if (fd == -ENXIO)
        return -TFILE_EKIND; /* a FIFO with no reader */
    return keep_if(fd, S_IFREG);
}

int tfile_open_dir(int dirfd, const char *path)
{
    return keep_if(open_beneath(dirfd, path, O_RDONLY | O_DIRECTORY, 0), S_IFDIR);
}

/* Splits path into its folder (in dir, "" for none) and its last component
 * (returned, pointing into path). NULL if there is no last component. */
static const char *split(const char *path, char *dir, size_t len)
{
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (start == n || n - start > NAME_MAX || start >= len)
        return NULL;
    if (path[n] != '\0')
        return NULL; /* "a/b/": a folder, not a file name */
    memcpy(dir, path, start);
    dir[start] = '\0';
    return path + start;
}

int tfile_mkdir(int dirfd, const char *path, mode_t mode)
{
    int rc = check_path(path);
    if (rc < 0)
        return rc;
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    int cur = tfile_open_dir(dirfd, "");
    for (char *p = buf, *save = NULL; cur >= 0 && (p = strtok_r(p, "/", &save));
         p = NULL) {
        if (strcmp(p, ".") == 0)
            continue;
        if (mkdirat(cur, p, mode) < 0 && errno != EEXIST) {
            rc = -errno;
            close(cur);
            return rc;
        }
        int next = tfile_open_dir(cur, p);
        close(cur);
        cur = next == -TFILE_EKIND ? -ENOTDIR : next;
    }
    return cur;
}

int tfile_read_fd_room(int fd, size_t max, size_t hint, size_t room, char **out,
                       size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t cap = (hint > max ? max : hint) + 1, n = 0;
    char *buf = malloc(room + cap + 1);
    int rc = buf ? 0 : -ENOMEM;
    /* Read to the end: what the hint said can grow, up to max. */
    while (!rc) {
        if (n == cap) {
            size_t want = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *more = want > cap ? realloc(buf, room + want + 1) : NULL;
            if (!more) {
                rc = want > cap ? -ENOMEM : -EFBIG;
                break;
            }
            buf = more;
            cap = want;
        }
        ssize_t r = read(fd, buf + room + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = -errno;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    if (!rc && n > max)
        rc = -EFBIG;
    if (rc) {
        free(buf);
        return rc;
    }
    buf[room + n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int tfile_read_fd(int fd, size_t max, size_t hint, char **out, size_t *len)
{
    return tfile_read_fd_room(fd, max, hint, 0, out, len);
}

int tfile_read(int dirfd, const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = tfile_open(dirfd, path, O_RDONLY);
    if (fd < 0)
        return fd;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (!rc && (uint64_t)st.st_size > max)
        rc = -EFBIG;
    if (!rc)
        rc = tfile_read_fd(fd, max, (size_t)st.st_size, out, len);
    close(fd);
    return rc;
}

static void release(struct tfile_new *t)
{
    if (t->fd >= 0)
        close(t->fd);
    if (t->dirfd >= 0)
        close(t->dirfd);
    t->fd = t->dirfd = -1;
    t->name[0] = '\0';
}

int tfile_create(int dirfd, const char *dir, mode_t mode, struct tfile_new *t)
{
    t->fd = -1;
    t->name[0] = '\0';
    t->dirfd = tfile_open_dir(dirfd, dir);
    if (t->dirfd < 0) {
        int rc = t->dirfd;
        t->dirfd = -1;
        return rc;
    }
    int rc = -EEXIST;
    for (int tries = 0; tries < 8 && rc == -EEXIST; tries++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
            rc = -EIO;
            break;
        }
        snprintf(t->name, sizeof t->name, ".sandpit-%016llx", (unsigned long long)r);
        int fd = openat(t->dirfd, t->name,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                        mode);
        rc = fd < 0 ? -errno : 0;
        if (fd >= 0)
            t->fd = fd;
    }
    if (rc)
        release(t);
    return rc;
}

int tfile_commit(struct tfile_new *t, const char *name, unsigned flags)
{
    if (t->dirfd < 0 || t->fd < 0)
        return -EBADF;
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0) {
        tfile_abort(t);
        return -EINVAL;
    }
    int rc;
    if (flags & TFILE_REPLACE) {
        rc = renameat(t->dirfd, t->name, t->dirfd, name) < 0 ? -errno : 0;
    } else {
        rc = syscall(SYS_renameat2, t->dirfd, t->name, t->dirfd, name, RENAME_NOREPLACE) <
                     0
                 ? -errno
                 : 0;
        if (rc == -EINVAL || rc == -ENOSYS) {
            /* A file system without RENAME_NOREPLACE: a hard link fails on a taken
             * name just the same, and never follows one. */
            rc = linkat(t->dirfd, t->name, t->dirfd, name, 0) < 0 ? -errno : 0;
            if (!rc)
                unlinkat(t->dirfd, t->name, 0);
        }
    }
    if (rc == -EEXIST && !(flags & TFILE_REPLACE))
        return rc;
    if (rc)
        tfile_abort(t);
    else
        release(t);
    return rc;
}

void tfile_abort(struct tfile_new *t)
{
    if (t->dirfd >= 0 && t->name[0])
        unlinkat(t->dirfd, t->name, 0);
    release(t);
}

int tfile_write(int dirfd, const char *path, const void *buf, size_t len, mode_t mode,
                unsigned flags)
{
    char dir[PATH_MAX];
    int rc = check_path(path);
    const char *leaf = rc ? NULL : split(path, dir, sizeof dir);
    if (!leaf)
        return rc ? rc : -EINVAL;
    struct tfile_new t;
    if ((rc = tfile_create(dirfd, dir, mode, &t)) < 0)
        return rc;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(t.fd, (const char *)buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            tfile_abort(&t);
            return rc;
        }
        off += (size_t)w;
    }
    rc = tfile_commit(&t, leaf, flags);
    if (rc == -EEXIST)
        tfile_abort(&t);
    return rc;
}

/* Opens the folder name in parent for listing. A folder of ours without read,
 * write or search permission (a cell can chmod 000 one) is given them back
 * first, through a descriptor of that very folder (O_PATH, then chmod of its
 * /proc/self/fd link, which names the inode held, never a path a cell can
 * change): otherwise it and all below it would outlive the removal. */
static int open_to_empty(int parent, const char *name)
{
    int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = openat(parent, name, flags);
    if (fd < 0 && errno != EACCES)
        return errno == ENOTDIR ? -ELOOP : -errno;
    if (fd < 0) {
        int p = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        char proc[64];
        if (p < 0)
            return -errno;
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", p);
        if (fstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            chmod(proc, 0700) == 0)
            fd = openat(p, ".", flags);
        int err = fd < 0 ? -EACCES : 0;
        close(p);
        if (err)
            return err;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700)
        fchmod(fd, 0700); /* writable, so that its entries can go */
    return fd;
}

/* Empties the folder fd (owned: closed here), depth levels below the top. */
static int empty_dir(int fd, int depth, long *budget)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && --*budget > 0) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), n, 0) == 0)
            continue;
        int err = errno;
        if (err == EISDIR || err == EPERM) { /* a folder (EPERM: POSIX's answer) */
            int sub = depth < TFILE_MAX_DEPTH ? open_to_empty(dirfd(d), n) : -ELOOP;
            int sub_rc = sub < 0 ? sub : empty_dir(sub, depth + 1, budget);
            if (!sub_rc && unlinkat(dirfd(d), n, AT_REMOVEDIR) < 0)
                sub_rc = -errno;
            if (sub_rc && !rc)
                rc = sub_rc;
        } else if (err != ENOENT && !rc) {
            rc = -err;
        }
    }
    closedir(d);
    return *budget > 0 ? rc : (rc ? rc : -E2BIG);
}

int tfile_remove_tree(int dirfd, const char *name)
{
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -EINVAL;
    if (unlinkat(dirfd, name, 0) == 0)
        return 0; /* a file, a link, a FIFO: the entry itself goes */
    if (errno != EISDIR && errno != EPERM)
        return -errno;
    int fd = open_to_empty(dirfd, name);
    if (fd < 0)
        return fd;
    long budget = TFILE_MAX_ENTRIES;
    int rc = empty_dir(fd, 1, &budget);
    /* rmdir removes only an empty folder: if the name now holds another (swapped in),
     * it is either empty or stays. */
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && !rc)
        rc = -errno;
    return rc;
}

int tfile_remove_path(const char *path)
{
    char dir[PATH_MAX];
    const char *leaf = split(path, dir, sizeof dir);
    if (!leaf || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
        return -EINVAL;
    int fd = tfile_open_root(*dir ? dir : ".");
    if (fd < 0)
        return fd;
    int rc = tfile_remove_tree(fd, leaf);
    close(fd);
    return rc;
}
