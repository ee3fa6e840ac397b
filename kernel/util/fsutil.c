/* fsutil: mkdir -p and rm -rf, for folders the kernel owns.
 *
 * mkdir -p goes on past failures on the way down: a parent that exists but
 * may not be written (/home) can answer EACCES rather than EEXIST, so only the
 * last folder decides the result; when it fails for want of a parent, the
 * error that kept the parent from being made is the one reported. */
#include "kernel/util/fsutil.h"
#include "sandbox/tfile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fsutil_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    int parent_err = 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            parent_err = errno;
        *p = '/';
    }
    if (mkdir(buf, mode) == 0)
        return 0;
    int err = errno;
    struct stat st;
    if (err == EEXIST)
        return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    return -(err == ENOENT && parent_err ? parent_err : err);
}

void fsutil_remove_tree(const char *path)
{
    tfile_remove_path(path);
}

int fsutil_jupyter_data_dir(char *out, size_t len)
{
    const char *v;
    int n;
    if ((v = getenv("JUPYTER_DATA_DIR")) && *v)
        n = snprintf(out, len, "%s", v);
    else if ((v = getenv("XDG_DATA_HOME")) && *v)
        n = snprintf(out, len, "%s/jupyter", v);
    else if ((v = getenv("HOME")) && *v)
        n = snprintf(out, len, "%s/.local/share/jupyter", v);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Opens the folder of path and points *leaf at its last component. The
 * descriptor, or -errno. */
static int open_parent(const char *path, const char **leaf)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    *leaf = slash ? slash + 1 : path;
    if (!**leaf)
        return -EISDIR; /* "dir/" names a folder */
    int n = !slash ? snprintf(dir, sizeof dir, ".")
            : slash == path
                ? snprintf(dir, sizeof dir, "/")
                : snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (n < 0 || (size_t)n >= sizeof dir)
        return -ENAMETOOLONG;
    return tfile_open_root(dir);
}

int fsutil_write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
    const char *leaf;
    int dirfd = open_parent(path, &leaf);
    if (dirfd < 0)
        return dirfd;
    int rc = tfile_write(dirfd, leaf, buf, len, mode, TFILE_REPLACE);
    close(dirfd);
    return rc;
}

int fsutil_read_file(const char *path, size_t max, char **out, size_t *len)
{
    const char *leaf;
    *out = NULL;
    int dirfd = open_parent(path, &leaf);
    if (dirfd < 0)
        return dirfd;
    int rc = tfile_read(dirfd, leaf, max, out, len);
    close(dirfd);
    return rc;
}
