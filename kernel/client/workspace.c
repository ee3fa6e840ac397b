/* workspace: confined paths, through tfile.
 *
 * A check on the path's text alone (no "..", not absolute) is not enough: a
 * symbolic link inside the workspace can point anywhere, and it can be made
 * by the sandboxed code itself, as can a FIFO that would hang the server. So
 * every path is opened by tfile beneath the workspace's descriptor: no link
 * followed anywhere on it (nor a /proc magic link), O_NONBLOCK, and kept only
 * if it is a regular file (or a folder, for a listing), with no window
 * between check and use. Listing never follows a link: links are listed as
 * links. */
#include "kernel/client/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "protocol/errbuf.h"
#include "sandbox/tfile.h"

/* Names read from one folder, at most, before they are sorted and listed. */
#define WORKSPACE_DIR_NAMES_MAX 65536

int workspace_init(struct workspace *w, const char *root, const char *hidden)
{
    memset(w, 0, sizeof *w);
    if (!realpath(root, w->root))
        return -errno;
    if (hidden && !realpath(hidden, w->hidden))
        w->hidden[0] = 0; /* not there (yet): nothing to hide */
    return 0;
}

/* True when path (a real path) is the hidden folder or inside it. */
static bool is_hidden(const struct workspace *w, const char *path)
{
    size_t n = strlen(w->hidden);
    return n && strncmp(path, w->hidden, n) == 0 && (path[n] == '/' || path[n] == 0);
}

int workspace_open(const struct workspace *w, const char *rel, int directory, char *err,
                   size_t errlen)
{
    if (!rel)
        rel = "";
    if (rel[0] == '/')
        return errbuf_set(-EINVAL, err, errlen,
                          "\"%s\" is an absolute path: give a path relative to the "
                          "workspace",
                          rel);
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return errbuf_set(-EINVAL, err, errlen,
                              "\"%s\" goes up with \"..\": only paths inside the "
                              "workspace can be read",
                              rel);
        p += n;
        while (*p == '/')
            p++;
    }
    int root = tfile_open_root(w->root);
    if (root < 0)
        return errbuf_set(root, err, errlen, "cannot open the workspace: %s",
                          strerror(-root));
    int fd = directory ? tfile_open_dir(root, rel) : tfile_open(root, rel, O_RDONLY);
    close(root);
    if (fd == -ELOOP || fd == -EXDEV)
        return errbuf_set(-EXDEV, err, errlen,
                          "\"%s\" is or passes through a symbolic link, which is not "
                          "followed: it could lead outside the workspace",
                          rel);
    if (fd == -TFILE_EKIND || fd == -EISDIR || fd == -ENOTDIR)
        return errbuf_set(fd == -TFILE_EKIND ? -EINVAL : fd, err, errlen,
                          "\"%s\" is not a %s%s", rel,
                          directory ? "folder" : "regular file",
                          fd == -TFILE_EKIND ? " (a FIFO, a socket or a device is never "
                                               "opened)"
                                             : "");
    if (fd < 0)
        return errbuf_set(fd, err, errlen, "cannot open \"%s\": %s", rel, strerror(-fd));
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, real, sizeof real - 1);
    if (n > 0) {
        real[n] = 0;
        if (is_hidden(w, real)) {
            close(fd);
            return errbuf_set(-EACCES, err, errlen,
                              "\"%s\" is in the Jupyter runtime folder, which holds "
                              "kernels' keys: it cannot be read",
                              rel);
        }
    }
    return fd;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the folder open as fd (whose path is prefix) into out, then its
 * subfolders. Takes over fd. */
static void list_dir(const struct workspace *w, int fd, const char *prefix, json_t *out,
                     size_t max, int *truncated, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n >= WORKSPACE_DIR_NAMES_MAX) {
            *truncated = 1; /* the code can make millions: the server keeps a bound */
            break;
        }
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (json_array_size(out) >= max) {
            *truncated = 1;
            break;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", names[i]);
        struct stat st;
        if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        const char *type = S_ISREG(st.st_mode)   ? "file"
                           : S_ISDIR(st.st_mode) ? "folder"
                           : S_ISLNK(st.st_mode) ? "link"
                                                 : "other";
        if (S_ISDIR(st.st_mode)) {
            char full[PATH_MAX * 2];
            snprintf(full, sizeof full, "%s/%s", w->root, path);
            if (is_hidden(w, full))
                continue;
        }
        json_array_append_new(out, json_pack("{s:s, s:s, s:I}", "path", path, "type",
                                             type, "size", (json_int_t)st.st_size));
        if (S_ISDIR(st.st_mode) && depth < 32) {
            int sub = tfile_open_dir(dirfd(d), names[i]);
            if (sub >= 0)
                list_dir(w, sub, path, out, max, truncated, depth + 1);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
}

json_t *workspace_list(const struct workspace *w, const char *rel, size_t max_entries,
                       int *truncated, char *err, size_t errlen)
{
    *truncated = 0;
    if (rel && strcmp(rel, ".") == 0)
        rel = "";
    int fd = workspace_open(w, rel, 1, err, errlen);
    if (fd < 0)
        return NULL;
    json_t *out = json_array();
    if (!out) {
        close(fd);
        return NULL;
    }
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s", rel ? rel : "");
    size_t n = strlen(prefix);
    while (n && prefix[n - 1] == '/')
        prefix[--n] = 0;
    list_dir(w, fd, prefix, out, max_entries, truncated, 0);
    return out;
}

int workspace_read_range(const struct workspace *w, const char *rel, size_t offset,
                         size_t max_bytes, char **data, size_t *len, size_t *size,
                         char *err, size_t errlen)
{
    *data = NULL;
    *len = *size = 0;
    if (!rel || !*rel)
        return errbuf_set(-EINVAL, err, errlen, "give the path of a file to read");
    int fd = workspace_open(w, rel, 0, err, errlen);
    if (fd < 0)
        return fd;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = errbuf_set(-errno, err, errlen, "cannot read \"%s\": %s", rel,
                        strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = errbuf_set(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, err, errlen,
                        "\"%s\" is not a file", rel);
        goto out;
    }
    *size = (size_t)st.st_size;
    size_t want = offset < *size ? *size - offset : 0;
    if (want > max_bytes)
        want = max_bytes;
    char *buf = malloc(want + 1);
    size_t got = 0;
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    while (got < want) { /* the file may shrink meanwhile: what is there */
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = 0;
    *data = buf;
    *len = got;
out:
    close(fd);
    return rc;
}

int workspace_read(const struct workspace *w, const char *rel, size_t max_bytes,
                   char **data, size_t *len, char *err, size_t errlen)
{
    size_t size;
    int rc = workspace_read_range(w, rel, 0, max_bytes, data, len, &size, err, errlen);
    if (!rc && size > max_bytes) {
        free(*data);
        *data = NULL;
        *len = 0;
        rc = errbuf_set(-EFBIG, err, errlen,
                        "\"%s\" has %zu bytes, more than the %zu that can be read", rel,
                        size, max_bytes);
    }
    return rc;
}
