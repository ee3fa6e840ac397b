/* tmpdir: make the kernel's private folders, and reap stale ones.
 *
 * A kernel killed outright (SIGKILL, a crash) cannot remove its own folders.
 * A folder's name holds the pid of the kernel that made it, so the next
 * kernel removes those of this user whose process is gone: temporary folders,
 * and the supervisor's own (a connection file with its key). A pid that is
 * alive, or that cannot be checked, keeps its folder: a folder is never taken
 * from a running kernel. */
#include "kernel/supervisor/tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/fsutil.h"
#include "kernel/log.h"

static void remove_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "sandpit-", 8) != 0)
            continue;
        long pid = strtol(e->d_name + 8, &end, 10);
        if (end == e->d_name + 8 || *end != '-' || pid <= 1)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to know */
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= (int)sizeof path ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        log_info("removing %s, left by a kernel that ended without cleaning up", path);
        fsutil_remove_tree(path);
    }
    closedir(d);
}

/* mkdtemp of TMPDIR/sandpit-<pid>-<infix>XXXXXX, else of /tmp's; *base is the
 * folder it was made in (borrowed: TMPDIR's value or a literal). */
static int make_named(const char *infix, const char **base, char **out)
{
    *out = NULL;
    const char *env = getenv("TMPDIR");
    *base = env && *env == '/' ? env : "/tmp";
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/sandpit-%d-%sXXXXXX", *base, (int)getpid(),
                 infix) >= (int)sizeof path ||
        !mkdtemp(path)) {
        *base = "/tmp";
        snprintf(path, sizeof path, "%s/sandpit-%d-%sXXXXXX", *base, (int)getpid(),
                 infix);
        if (!mkdtemp(path))
            return -errno;
    }
    *out = strdup(path);
    return *out ? 0 : -ENOMEM;
}

int tmpdir_make(char **out)
{
    const char *base;
    int rc = make_named("", &base, out);
    if (!rc)
        remove_stale(base);
    return rc;
}

int tmpdir_make_private(const char *what, char **out)
{
    char infix[32];
    size_t n = strlen(what);
    if (!n || n > sizeof infix - 2 || strspn(what, "abcdefghijklmnopqrstuvwxyz") != n) {
        *out = NULL;
        return -EINVAL;
    }
    snprintf(infix, sizeof infix, "%s-", what);
    const char *base;
    return make_named(infix, &base, out);
}

void tmpdir_remove(const char *path)
{
    fsutil_remove_tree(path);
}
