/* cgroup: a group of its own for each worker (see cgroup.h), made, joined and removed
 * by the supervisor. Where the groups live is cgroup_view.c's; the worker's check of
 * the group it is in, cgroup_check.c's; reading and writing their files, kfile.c's.
 *
 * The hard part is finding "the kernel's own group" on every kind of machine:
 *   - cgroup v1 (these machines: memory and pids each mounted on their own): the
 *     supervisor's group in each hierarchy comes from /proc/self/cgroup, and where that
 *     hierarchy is mounted from /proc/self/mountinfo (whose root field says which part
 *     of it a container sees). Root may make a child there; others usually may not.
 *   - cgroup v2 (one hierarchy): a group may hand controllers to its children only if
 *     it holds no process itself. A supervisor alone in its group (started by
 *     `systemd-run --scope`, a container, a delegated service) moves itself into a leaf
 *     "sandpit-<pid>-supervisor" and enables the controllers for its workers; one that
 *     shares its group with other processes (a terminal's, a notebook server's) cannot,
 *     and the report says so.
 * Each step that fails leaves a sentence in the detail; the worker then runs without a
 * group and its report says that its memory limit covers private memory only.
 *
 * Everything here runs in the supervisor, except sandbox_cgroup_join (between fork and
 * exec, so async-signal-safe: one write per hierarchy).
 */
#include "sandbox/cgroup.h"
#include "sandbox/stop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/cgroup_view.h"
#include "sandbox/internal.h"
#include "sandbox/kfile.h"

#define CPU_PERIOD_US 100000

uint64_t sandbox_cgroup_memory_limit(uint64_t memory_bytes)
{
    if (!memory_bytes)
        return 0;
    uint64_t headroom = memory_bytes / 8;
    if (headroom < SANDBOX_CGROUP_HEADROOM_MIN)
        headroom = SANDBOX_CGROUP_HEADROOM_MIN;
    return memory_bytes + headroom;
}

/* --- making and removing groups ----------------------------------------------------- */

/* Removes groups "sandpit-<pid>-..." under base whose supervisor is gone: a kernel
 * killed outright could not remove its own, nor end what its worker's preloads had
 * forked (stop.h), which is ended first. A group still in use fails with EBUSY. */
static void sweep_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!sandbox_stop_left_behind(e->d_name))
            continue;
        char path[PATH_MAX];
        if (kfile_join(path, sizeof path, base, e->d_name)) {
            sandbox_stop_group_dir(path);
            rmdir(path);
        }
    }
    closedir(d);
}

/* Makes base/name; its path (new) in *out. 0 or -errno. */
static int make_group(const char *base, const char *name, char **out)
{
    char path[PATH_MAX];
    if (!kfile_join(path, sizeof path, base, name))
        return -ENAMETOOLONG;
    sweep_stale(base);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (!(*out = strdup(path))) {
        rmdir(path);
        return -ENOMEM;
    }
    return 0;
}

void sandbox_cgroup_init(struct sandbox_cgroup *cg)
{
    memset(cg, 0, sizeof *cg);
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++)
        cg->procs[i] = -1;
}

static void close_procs(struct sandbox_cgroup *cg)
{
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++) {
        if (cg->procs[i] >= 0)
            close(cg->procs[i]);
        cg->procs[i] = -1;
    }
}

void sandbox_cgroup_release(struct sandbox_cgroup *cg)
{
    close_procs(cg);
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++)
        free(cg->dirs[i]);
    char detail[SANDBOX_DETAIL_MAX];
    memcpy(detail, cg->detail, sizeof detail);
    sandbox_cgroup_init(cg);
    memcpy(cg->detail, detail, sizeof detail);
}

int sandbox_cgroup_remove(struct sandbox_cgroup *cg)
{
    close_procs(cg);
    int rc = 0;
    for (int i = SANDBOX_CGROUP_NCTL - 1; i >= 0; i--) {
        if (!cg->dirs[i])
            continue;
        if (rmdir(cg->dirs[i]) < 0 && errno != ENOENT) {
            if (rc == 0)
                rc = -errno;
            continue;
        }
        free(cg->dirs[i]);
        cg->dirs[i] = NULL;
    }
    if (rc == 0) {
        cg->version = 0;
        cg->pid = 0;
    }
    return rc;
}

/* The limits written into a group's files, described for the detail; cpu says whether
 * the CPU quota was set. */
static void describe(struct sandbox_cgroup *cg, const struct sandbox_cgroup_limits *lim,
                     bool cpu, const char *notes)
{
    char mem[32] = "no limit", ncpu[32] = "";
    uint64_t bytes = sandbox_cgroup_memory_limit(lim->memory_bytes);
    if (bytes && !CGROUP_ASAN)
        sandbox__format_size(mem, sizeof mem, bytes);
    if (cpu)
        snprintf(ncpu, sizeof ncpu, ", %g CPU", lim->cpus);
    const char *last = strrchr(cg->dirs[SANDBOX_CGROUP_MEMORY], '/');
    snprintf(cg->detail, sizeof cg->detail, "made %s (v%d): memory %s, tasks %u%s%s%s",
             last ? last + 1 : "?", cg->version, mem, lim->tasks, ncpu,
             notes[0] ? "; " : "", notes);
}

/* Undoes what was made; the detail says why (fmt: what failed, then ": %s" for rc). */
static int fail(struct sandbox_cgroup *cg, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct sandbox_cgroup *cg, int rc, const char *fmt, ...)
{
    char why[SANDBOX_DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof why)
        snprintf(why + n, sizeof why - (size_t)n, ": %s", strerror(-rc));
    sandbox_cgroup_remove(cg);
    sandbox_cgroup_release(cg);
    snprintf(cg->detail, sizeof cg->detail, "%s", why);
    return rc;
}

static int open_procs(struct sandbox_cgroup *cg)
{
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++) {
        char path[PATH_MAX];
        if (!cg->dirs[i])
            continue;
        if (!kfile_join(path, sizeof path, cg->dirs[i], "cgroup.procs"))
            return -ENAMETOOLONG;
        if ((cg->procs[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
            return -errno;
    }
    return 0;
}

static int create_v1(struct sandbox_cgroup *cg, const struct cgroup_view *v,
                     const char *mem_base, const char *name,
                     const struct sandbox_cgroup_limits *lim)
{
    char notes[SANDBOX_DETAIL_MAX] = "", base[PATH_MAX], value[32];
    int rc;
    cg->version = 1;
    if ((rc = make_group(mem_base, name, &cg->dirs[SANDBOX_CGROUP_MEMORY])) < 0)
        return fail(cg, rc, "cannot make a memory group under %s", mem_base);
    uint64_t bytes = sandbox_cgroup_memory_limit(lim->memory_bytes);
    if (bytes && !CGROUP_ASAN) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)bytes);
        if ((rc = kfile_write_at(cg->dirs[0], "memory.limit_in_bytes", value)) < 0)
            return fail(cg, rc, "cannot set %s/memory.limit_in_bytes", cg->dirs[0]);
        /* Memory and swap together, where swap is accounted: no way round by swapping. */
        rc = kfile_write_at(cg->dirs[0], "memory.memsw.limit_in_bytes", value);
        if (rc < 0 && rc != -ENOENT)
            return fail(cg, rc, "cannot set %s/memory.memsw.limit_in_bytes", cg->dirs[0]);
        if (rc == -ENOENT)
            snprintf(notes, sizeof notes, "swap not accounted");
    }
    if (lim->tasks) {
        rc = cgroup_view_locate(v, 1, "pids", base, sizeof base);
        if (rc == 0)
            rc = make_group(base, name, &cg->dirs[SANDBOX_CGROUP_PIDS]);
        if (rc == 0) {
            snprintf(value, sizeof value, "%u", lim->tasks);
            if ((rc = kfile_write_at(cg->dirs[SANDBOX_CGROUP_PIDS], "pids.max", value)) <
                0)
                return fail(cg, rc, "cannot set %s/pids.max",
                            cg->dirs[SANDBOX_CGROUP_PIDS]);
        } else {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%stasks not limited: %s",
                     n ? ", " : "", rc == -ENOENT ? "no pids hierarchy" : strerror(-rc));
        }
    }
    if (lim->cpus > 0) {
        rc = cgroup_view_locate(v, 1, "cpu", base, sizeof base);
        if (rc == 0)
            rc = make_group(base, name, &cg->dirs[SANDBOX_CGROUP_CPU]);
        if (rc == 0) {
            snprintf(value, sizeof value, "%lld",
                     (long long)(lim->cpus * CPU_PERIOD_US + 0.5));
            if ((rc = kfile_write_at(cg->dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_period_us",
                                     "100000")) < 0 ||
                (rc = kfile_write_at(cg->dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_quota_us",
                                     value)) < 0)
                return fail(cg, rc, "cannot set the CPU quota of %s",
                            cg->dirs[SANDBOX_CGROUP_CPU]);
        } else {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%sCPU not limited: %s", n ? ", " : "",
                     rc == -ENOENT ? "no cpu hierarchy" : strerror(-rc));
        }
    }
    if ((rc = open_procs(cg)) < 0)
        return fail(cg, rc, "cannot open the cgroup.procs of %s", cg->dirs[0]);
    describe(cg, lim, cg->dirs[SANDBOX_CGROUP_CPU] != NULL, notes);
    return 0;
}

/* True if our own process is the only one in the v2 group dir. */
static bool alone_in(const char *dir)
{
    char path[PATH_MAX];
    if (!kfile_join(path, sizeof path, dir, "cgroup.procs"))
        return false;
    char *procs = kfile_read_text(path);
    if (!procs)
        return false;
    char me[24];
    snprintf(me, sizeof me, "%d", (int)getpid());
    bool alone = strcmp(procs, me) == 0 || (strncmp(procs, me, strlen(me)) == 0 &&
                                            !strcmp(procs + strlen(me), "\n"));
    free(procs);
    return alone;
}

/* Hands the controllers in want ("memory pids cpu", each one base has) down from base
 * to its children, those its cgroup.subtree_control does not list yet: one write of
 * "+memory +pids ...", which the kernel applies all or none. A v2 group other than the
 * root may hand controllers down only while it holds no process, so a supervisor alone
 * in base moves into a leaf of its own first; one that shares base gets EBUSY from the
 * kernel. 0 or -errno. */
static int enable_controllers(const char *base, const char *want)
{
    char have[256] = "", word[16], plus[64] = "";
    kfile_read_line_at(base, "cgroup.subtree_control", have, sizeof have);
    for (const char *p = want; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        p += n + (p[n] == ' ');
        size_t k = strlen(plus);
        if (!cgroup_has_word(have, word))
            snprintf(plus + k, sizeof plus - k, "%s+%s", k ? " " : "", word);
    }
    if (!plus[0])
        return 0;
    if (alone_in(base)) {
        char leaf[64], *dir = NULL, me[24];
        snprintf(leaf, sizeof leaf, "sandpit-%d-supervisor", (int)getpid());
        snprintf(me, sizeof me, "%d", (int)getpid());
        int rc = make_group(base, leaf, &dir);
        if (rc == 0)
            rc = kfile_write_at(dir, "cgroup.procs", me);
        free(dir);
        if (rc < 0)
            return rc;
    }
    return kfile_write_at(base, "cgroup.subtree_control", plus);
}

static int create_v2(struct sandbox_cgroup *cg, char *base, const char *name,
                     const struct sandbox_cgroup_limits *lim)
{
    char leaf[64], value[48], want[32], notes[SANDBOX_DETAIL_MAX] = "";
    int rc;
    /* After the first worker, the supervisor sits in its own leaf: its parent is the
     * kernel's group. */
    snprintf(leaf, sizeof leaf, "/sandpit-%d-supervisor", (int)getpid());
    size_t bl = strlen(base), ll = strlen(leaf);
    if (bl > ll && strcmp(base + bl - ll, leaf) == 0)
        base[bl - ll] = 0;
    /* Only what base has can be handed down (memory it has: memory_version). */
    char controllers[256] = "";
    kfile_read_line_at(base, "cgroup.controllers", controllers, sizeof controllers);
    bool pids = lim->tasks && cgroup_has_word(controllers, "pids");
    bool cpu = lim->cpus > 0 && cgroup_has_word(controllers, "cpu");
    snprintf(want, sizeof want, "memory%s%s", pids ? " pids" : "", cpu ? " cpu" : "");
    if ((rc = enable_controllers(base, want)) < 0) {
        sandbox_cgroup_release(cg);
        snprintf(cg->detail, sizeof cg->detail,
                 "cannot hand the memory controller down from %s: %s%s", base,
                 strerror(-rc),
                 rc == -EBUSY ? " (the kernel shares its group with other processes: "
                                "start it in one of its own, for example with "
                                "systemd-run --user --scope)"
                              : "");
        return rc;
    }
    cg->version = 2;
    if ((rc = make_group(base, name, &cg->dirs[0])) < 0)
        return fail(cg, rc, "cannot make a group under %s", base);
    uint64_t bytes = sandbox_cgroup_memory_limit(lim->memory_bytes);
    if (bytes && !CGROUP_ASAN) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)bytes);
        if ((rc = kfile_write_at(cg->dirs[0], "memory.max", value)) < 0)
            return fail(cg, rc, "cannot set %s/memory.max", cg->dirs[0]);
        rc = kfile_write_at(cg->dirs[0], "memory.swap.max", "0");
        if (rc == -ENOENT)
            snprintf(notes, sizeof notes, "swap not accounted");
        else if (rc < 0)
            return fail(cg, rc, "cannot set %s/memory.swap.max", cg->dirs[0]);
    }
    /* The worker is one process: an OOM kill takes all of it, never half. */
    kfile_write_at(cg->dirs[0], "memory.oom.group", "1");
    if (pids) {
        snprintf(value, sizeof value, "%u", lim->tasks);
        if ((rc = kfile_write_at(cg->dirs[0], "pids.max", value)) < 0)
            return fail(cg, rc, "cannot set %s/pids.max", cg->dirs[0]);
    } else if (lim->tasks) {
        size_t n = strlen(notes);
        snprintf(notes + n, sizeof notes - n, "%stasks not limited: no pids controller",
                 n ? ", " : "");
    }
    if (cpu) {
        snprintf(value, sizeof value, "%lld %d",
                 (long long)(lim->cpus * CPU_PERIOD_US + 0.5), CPU_PERIOD_US);
        if ((rc = kfile_write_at(cg->dirs[0], "cpu.max", value)) < 0) {
            cpu = false;
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%sCPU not limited: %s", n ? ", " : "",
                     strerror(-rc));
        }
    } else if (lim->cpus > 0) {
        size_t n = strlen(notes);
        snprintf(notes + n, sizeof notes - n, "%sCPU not limited: no cpu controller",
                 n ? ", " : "");
    }
    if ((rc = open_procs(cg)) < 0)
        return fail(cg, rc, "cannot open %s/cgroup.procs", cg->dirs[0]);
    describe(cg, lim, cpu, notes);
    return 0;
}

int sandbox__cgroup_create_in(struct sandbox_cgroup *cg, unsigned seq,
                              const struct sandbox_cgroup_limits *lim, const char *self,
                              const char *mountinfo)
{
    sandbox_cgroup_init(cg);
    const struct cgroup_view v = {self, mountinfo};
    char base[PATH_MAX], name[64];
    snprintf(name, sizeof name, "sandpit-%d-%u", (int)getpid(), seq);
    switch (cgroup_view_memory_version(&v, base, sizeof base)) {
    case 1:
        return create_v1(cg, &v, base, name, lim);
    case 2:
        return create_v2(cg, base, name, lim);
    default:
        snprintf(cg->detail, sizeof cg->detail,
                 "no cgroup hierarchy with the memory controller is mounted here");
        return -ENOENT;
    }
}

int sandbox_cgroup_create(struct sandbox_cgroup *cg, unsigned seq,
                          const struct sandbox_cgroup_limits *lim)
{
    char *texts[2];
    struct cgroup_view v = cgroup_view_read(texts);
    int rc = sandbox__cgroup_create_in(cg, seq, lim, v.self, v.mountinfo);
    free(texts[0]);
    free(texts[1]);
    return rc;
}

int sandbox_cgroup_join(const struct sandbox_cgroup *cg)
{
    int rc = 0;
    for (int i = 0; i < SANDBOX_CGROUP_NCTL; i++)
        if (cg->procs[i] >= 0 && write(cg->procs[i], "0", 1) != 1 && rc == 0)
            rc = -errno;
    return rc;
}

void sandbox_cgroup_started(struct sandbox_cgroup *cg, pid_t pid)
{
    cg->pid = pid;
    close_procs(cg);
}

/* The number after key in a "key value" file of dir (0 if absent). */
static unsigned long long keyed_value(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX];
    if (!dir || !kfile_join(path, sizeof path, dir, file))
        return 0;
    char *text = kfile_read_text(path);
    if (!text)
        return 0;
    unsigned long long v = 0;
    size_t n = strlen(key);
    for (char *line = text; line && *line;) {
        if (strncmp(line, key, n) == 0 && line[n] == ' ') {
            v = strtoull(line + n + 1, NULL, 10);
            break;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    free(text);
    return v;
}

bool sandbox_cgroup_memory_killed(const struct sandbox_cgroup *cg)
{
    const char *dir = cg->dirs[SANDBOX_CGROUP_MEMORY];
    if (cg->version == 1)
        return keyed_value(dir, "memory.oom_control", "oom_kill") > 0;
    if (cg->version == 2)
        return keyed_value(dir, "memory.events", "oom_kill") > 0;
    return false;
}
