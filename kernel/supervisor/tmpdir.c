/* tmpdir: make the private temporary folder, and reap stale ones.
 *
 * A kernel killed outright (SIGKILL, a crash) cannot remove its own folder.
 * The folder's name holds the pid of the kernel that made it, so the next
 * kernel removes those of this user whose process is gone. A pid that is
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

int tmpdir_make(char **out)
{
    *out = NULL;
    const char *env = getenv("TMPDIR");
    const char *base = env && *env == '/' ? env : "/tmp";
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sandpit-%d-XXXXXX", base, (int)getpid());
    if (!mkdtemp(path)) {
        base = "/tmp";
        snprintf(path, sizeof path, "%s/sandpit-%d-XXXXXX", base, (int)getpid());
        if (!mkdtemp(path))
            return -errno;
    }
    remove_stale(base);
    *out = strdup(path);
    return *out ? 0 : -ENOMEM;
}

void tmpdir_remove(const char *path)
{
    fsutil_remove_tree(path);
}
