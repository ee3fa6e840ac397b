/* Mounts: the two small steps that the mount namespace (namespaces.c) and the
 * masks inside it (masks.c) share: a mount made read-only or read-write again with
 * mount_setattr(2), and a path named in the report, shortened to the workspace or
 * the home folder. Both are used only inside the worker's own mount namespace.
 */
#include "sandbox/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* mount_setattr(2), Linux 5.12; glibc 2.36's <sys/mount.h> and <linux/mount.h> clash. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#define NS_MOUNT_ATTR_SIZE_VER0 32

struct ns_mount_attr {
    uint64_t attr_set;
    uint64_t attr_clr;
    uint64_t propagation;
    uint64_t userns_fd;
};

int sandbox__mount_rdonly(const char *path, bool rdonly, bool recursive)
{
    struct ns_mount_attr a = {0};
    if (rdonly)
        a.attr_set = MOUNT_ATTR_RDONLY;
    else
        a.attr_clr = MOUNT_ATTR_RDONLY;
    long rc = syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a,
                      (size_t)NS_MOUNT_ATTR_SIZE_VER0);
    return rc < 0 ? -errno : 0;
}

/* path as the report shows it: "./x" inside the workspace, "~/x" inside the home
 * folder, or whole; into buf. */
static const char *short_name(const char *path, const char *workspace, char *buf,
                              size_t len)
{
    const char *home = getenv("HOME");
    size_t w = workspace ? strlen(workspace) : 0, n = home ? strlen(home) : 0;
    bool in_ws = w > 1 && strncmp(path, workspace, w) == 0 && path[w] == '/';
    bool in_home = n > 1 && strncmp(path, home, n) == 0 && (path[n] == '/' || !path[n]);
    if (in_home && (!in_ws || n >= w)) /* the nearer of the two */
        snprintf(buf, len, "~%s", path + n);
    else if (in_ws)
        snprintf(buf, len, ".%s", path + w);
    else
        snprintf(buf, len, "%s", path);
    return buf;
}

/* Appends a path to a list being written for the report. */
void sandbox__list_path(char *list, size_t size, const char *path, const char *workspace)
{
    char shown[PATH_MAX];
    size_t n = strlen(list);
    short_name(path, workspace, shown, sizeof shown);
    int k = snprintf(list + n, size - n, "%s%.*s", n ? ", " : "", (int)(size - n), shown);
    if (k < 0 || (size_t)k >= size - n)
        memcpy(list + size - 4, "...", 4); /* the report's detail is bounded too */
}
