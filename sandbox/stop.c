/* stop: the end of a worker is the end of all its processes (stop.h).
 *
 * What is hard here is that the processes move while they are being killed. A
 * process forked before the filter may fork again at any time, so one reading of
 * the group (or of /proc) is never the last: each pass signals what it finds that
 * was not signalled already, and the passes go on until one finds nothing new.
 * A process that has been sent SIGKILL forks no more, so that ends in as many passes
 * as the tree is deep at most; a bound on the passes keeps a broken /proc from
 * holding the supervisor's loop.
 *
 * Pids are signalled as they are read, so a pid that ended and was taken by an
 * unrelated process in between would be hit: the group's own cgroup.kill has no such
 * window, and neither does a descendant of the supervisor, which is a subreaper, until
 * it is reaped (the supervisor reaps only in its loop, not while this runs) or its
 * parent in the tree reaps it.
 */
#include "sandbox/stop.h"

#include "sandbox/kfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STOP_PASSES 32   /* readings of the group or of /proc, at most */
#define STOP_MAX    4096 /* pids remembered as signalled (pids.max is 1024) */

/* Pids already signalled, so that a pass counts only what is new. */
struct signalled {
    pid_t pid[STOP_MAX];
    size_t n;
};

/* SIGKILL to pid unless it was signalled already: true if it is new. */
static bool signal_once(struct signalled *s, pid_t pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pid[i] == pid)
            return false;
    kill(pid, SIGKILL);
    if (s->n < STOP_MAX)
        s->pid[s->n++] = pid;
    return true;
}

/* One reading of dir/cgroup.procs: each pid listed is signalled. The number of new
 * ones, or -errno. */
static int stop_listed(const char *dir, struct signalled *s)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path)
        return -ENAMETOOLONG;
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    int fresh = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 1 && pid != (long)getpid() && signal_once(s, (pid_t)pid))
            fresh++;
    fclose(f);
    return fresh;
}

int sandbox_stop_group_dir(const char *dir)
{
    if (!dir)
        return -ENOENT;
    if (kfile_write_at(dir, "cgroup.kill", "1") == 0) /* v2 only, Linux 5.14+ */
        return 0;
    struct signalled *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    int rc = 0, total = 0;
    for (int pass = 0; pass < STOP_PASSES && (rc = stop_listed(dir, s)) > 0; pass++)
        total += rc;
    free(s);
    return rc < 0 ? rc : total;
}

int sandbox_stop_group(const struct sandbox_cgroup *cg)
{
    if (!cg->version)
        return -ENOENT;
    int rc = -ENOENT, total = 0;
    /* v1: the same processes are in each hierarchy's group; one that holds them is
     * enough, but a group the worker failed to join in one hierarchy may be empty. */
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++) {
        if (!cg->dirs[i])
            continue;
        int r = sandbox_stop_group_dir(cg->dirs[i]);
        if (r >= 0) {
            total += r;
            rc = 0;
        }
        if (cg->version == 2)
            break;
    }
    return rc < 0 ? rc : total;
}

/* A process as /proc shows it. */
struct proc_entry {
    pid_t pid, ppid;
};

/* Every process's pid and parent, into a new array (caller frees); NULL when /proc
 * cannot be read. */
static struct proc_entry *read_procs(size_t *n)
{
    DIR *d = opendir("/proc");
    if (!d)
        return NULL;
    size_t cap = 256;
    struct proc_entry *v = malloc(cap * sizeof *v);
    *n = 0;
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = 0;
        char *end = strrchr(buf, ')'); /* the name may hold anything, ')' too */
        long ppid;
        if (!end || sscanf(end + 1, " %*c %ld", &ppid) != 1)
            continue;
        if (*n == cap) {
            struct proc_entry *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
            cap *= 2;
        }
        v[(*n)++] = (struct proc_entry){(pid_t)atol(e->d_name), (pid_t)ppid};
    }
    closedir(d);
    return v;
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const struct proc_entry *)a)->pid,
          y = ((const struct proc_entry *)b)->pid;
    return (x > y) - (x < y);
}

/* The parent of pid in v (sorted by pid), or 0 if it is not there. */
static pid_t parent_of(const struct proc_entry *v, size_t n, pid_t pid)
{
    struct proc_entry key = {pid, 0};
    const struct proc_entry *e = bsearch(&key, v, n, sizeof *v, by_pid);
    return e ? e->ppid : 0;
}

/* True if pid descends from root by a line that passes through none of keep. */
static bool in_tree(const struct proc_entry *v, size_t n, pid_t pid, pid_t root,
                    const pid_t *keep, size_t nkeep)
{
    for (size_t depth = 0; pid > 1 && depth < n; depth++) {
        for (size_t k = 0; k < nkeep; k++)
            if (keep[k] && keep[k] == pid)
                return false;
        pid_t up = parent_of(v, n, pid);
        if (up == root)
            return true;
        pid = up;
    }
    return false;
}

int sandbox_stop_tree(pid_t root, const pid_t *keep, size_t nkeep)
{
    struct signalled *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    int total = 0, rc = 0;
    for (int pass = 0; pass < STOP_PASSES; pass++) {
        size_t n = 0;
        struct proc_entry *v = read_procs(&n);
        if (!v) {
            rc = errno ? -errno : -EIO;
            break;
        }
        qsort(v, n, sizeof *v, by_pid);
        int fresh = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i].pid != root && in_tree(v, n, v[i].pid, root, keep, nkeep) &&
                signal_once(s, v[i].pid))
                fresh++;
        free(v);
        total += fresh;
        if (!fresh)
            break;
    }
    free(s);
    return rc < 0 ? rc : total;
}

bool sandbox_stop_left_behind(const char *name)
{
    char *end;
    if (strncmp(name, "sandpit-", 8) != 0)
        return false;
    long pid = strtol(name + 8, &end, 10);
    if (end == name + 8 || *end != '-' || pid <= 1 || pid == (long)getpid())
        return false;
    /* Alive, or not ours to know (EPERM: another user's, whose pid it is now). */
    return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}
