/* cgroup: a group of its own for each worker (see cgroup.h), and the worker's check of
 * the group it is in.
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
 * exec, so async-signal-safe: one write per hierarchy) and sandbox__cgroup_check (in
 * the worker, before its other layers).
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

#include "sandbox/internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define CGROUP_ASAN 1
#else
#define CGROUP_ASAN 0
#endif

#define CPU_PERIOD_US 100000
#define TEXT_MAX      (1u << 20) /* /proc/self/mountinfo of a busy container */

static const char *const ctl_names[SANDBOX_CGROUP_NCTL] = {"memory", "pids", "cpu"};

uint64_t sandbox_cgroup_memory_limit(uint64_t memory_bytes)
{
    if (!memory_bytes)
        return 0;
    uint64_t headroom = memory_bytes / 8;
    if (headroom < SANDBOX_CGROUP_HEADROOM_MIN)
        headroom = SANDBOX_CGROUP_HEADROOM_MIN;
    return memory_bytes + headroom;
}

/* --- reading and writing the files ------------------------------------------------ */

/* The whole of a small file, NUL-terminated (caller frees), or NULL with errno set. */
static char *read_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - len < 2) {
            char *nb = cap < TEXT_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                errno = cap < TEXT_MAX ? ENOMEM : EFBIG;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            buf = NULL;
            errno = e;
            break;
        }
        if (n == 0) {
            buf[len] = 0;
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    return buf;
}

/* dir/name into buf; false if it does not fit. */
static bool join_path(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n > 0 && (size_t)n < len;
}

/* Writes text to dir/name: 0 or -errno. */
static int write_at(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    if (!join_path(path, sizeof path, dir, name))
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

/* The first line of dir/name (newline removed) into buf: 0 or -errno. */
static int read_at(const char *dir, const char *name, char *buf, size_t len)
{
    char path[PATH_MAX];
    if (!join_path(path, sizeof path, dir, name))
        return -ENAMETOOLONG;
    char *text = read_text(path);
    if (!text)
        return -errno;
    snprintf(buf, len, "%.*s", (int)strcspn(text, "\n"), text);
    free(text);
    return 0;
}

/* True if the space-separated list has word. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return true;
    return false;
}

/* True if the comma-separated list (of length len) has word. */
static bool has_item(const char *list, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < len;) {
        size_t k = i;
        while (k < len && list[k] != ',')
            k++;
        if (k - i == n && memcmp(list + i, word, n) == 0)
            return true;
        i = k + 1;
    }
    return false;
}

/* --- where a group lives ------------------------------------------------------------ */

int sandbox__cgroup_locate(const char *self, const char *mountinfo, int version,
                           const char *controller, char *dir, size_t len)
{
    /* /proc/self/cgroup: "ID:CONTROLLERS:PATH", v2 as "0::PATH". */
    const char *path = NULL;
    size_t path_len = 0;
    for (const char *line = self; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            bool match = version == 2
                             ? c1 - line == 1 && line[0] == '0' && c2 == c1 + 1
                             : has_item(c1 + 1, (size_t)(c2 - c1 - 1), controller);
            if (match) {
                path = c2 + 1;
                path_len = n - (size_t)(c2 + 1 - line);
                break;
            }
        }
        line = end ? end + 1 : NULL;
    }
    if (!path || path_len == 0 || path[0] != '/')
        return -ENOENT;

    /* /proc/self/mountinfo: "ID PARENT DEV ROOT MOUNTPOINT OPTIONS [OPTIONAL...] -
     * FSTYPE SOURCE SUPEROPTIONS". */
    for (const char *line = mountinfo; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        const char *next = end ? end + 1 : NULL;
        if (n >= sizeof buf) {
            line = next;
            continue;
        }
        memcpy(buf, line, n);
        buf[n] = 0;
        line = next;
        char *fields[6] = {0}, *save = NULL, *tok = strtok_r(buf, " ", &save);
        for (int i = 0; i < 6 && tok; i++, tok = strtok_r(NULL, " ", &save))
            fields[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!fields[4] || !fstype)
            continue;
        if (version == 2 ? strcmp(fstype, "cgroup2") != 0
                         : strcmp(fstype, "cgroup") != 0 || !super ||
                               !has_item(super, strlen(super), controller))
            continue;
        const char *root = fields[3], *mnt = fields[4];
        size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (rlen && (path_len < rlen || memcmp(path, root, rlen) != 0 ||
                     (path_len > rlen && path[rlen] != '/')))
            continue; /* this mount shows another part of the hierarchy */
        const char *rest = path + rlen;
        size_t rest_len = path_len - rlen;
        if (rest_len == 1 && rest[0] == '/')
            rest_len = 0;
        int k = snprintf(dir, len, "%s%.*s", mnt, (int)rest_len, rest);
        return k > 0 && (size_t)k < len ? 0 : -ENAMETOOLONG;
    }
    return -ENOENT;
}

/* What a process sees of its groups: the texts of /proc/self/cgroup and
 * /proc/self/mountinfo (borrowed). Every folder below is found through one, so where
 * the hierarchy lies is all a unit test has to choose (internal.h). */
struct view {
    const char *self;
    const char *mountinfo;
};

/* This process's view. Its texts are new, in texts[0] and texts[1] (caller frees
 * both); one that cannot be read is NULL there and empty in the view, where it
 * locates nothing. */
static struct view view_read(char *texts[2])
{
    texts[0] = read_text("/proc/self/cgroup");
    texts[1] = read_text("/proc/self/mountinfo");
    return (struct view){texts[0] ? texts[0] : "", texts[1] ? texts[1] : ""};
}

/* The group this process is in, in one hierarchy: 0, or -errno. */
static int locate(const struct view *v, int version, const char *controller, char *dir,
                  size_t len)
{
    return sandbox__cgroup_locate(v->self, v->mountinfo, version, controller, dir, len);
}

/* The version whose memory controller this machine uses (1 or 2), or 0. */
static int memory_version(const struct view *v, char *dir, size_t len)
{
    if (locate(v, 1, "memory", dir, len) == 0)
        return 1;
    if (locate(v, 2, NULL, dir, len) == 0) {
        char controllers[256] = "";
        if (read_at(dir, "cgroup.controllers", controllers, sizeof controllers) == 0 &&
            has_word(controllers, "memory"))
            return 2;
    }
    return 0;
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
        char *end;
        if (strncmp(e->d_name, "sandpit-", 8) != 0)
            continue;
        long pid = strtol(e->d_name + 8, &end, 10);
        if (end == e->d_name + 8 || *end != '-' || pid <= 1 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[PATH_MAX];
        if (join_path(path, sizeof path, base, e->d_name)) {
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
    if (!join_path(path, sizeof path, base, name))
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
        if (!join_path(path, sizeof path, cg->dirs[i], "cgroup.procs"))
            return -ENAMETOOLONG;
        if ((cg->procs[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
            return -errno;
    }
    return 0;
}

static int create_v1(struct sandbox_cgroup *cg, const struct view *v,
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
        if ((rc = write_at(cg->dirs[0], "memory.limit_in_bytes", value)) < 0)
            return fail(cg, rc, "cannot set %s/memory.limit_in_bytes", cg->dirs[0]);
        /* Memory and swap together, where swap is accounted: no way round by swapping. */
        rc = write_at(cg->dirs[0], "memory.memsw.limit_in_bytes", value);
        if (rc < 0 && rc != -ENOENT)
            return fail(cg, rc, "cannot set %s/memory.memsw.limit_in_bytes", cg->dirs[0]);
        if (rc == -ENOENT)
            snprintf(notes, sizeof notes, "swap not accounted");
    }
    if (lim->tasks) {
        rc = locate(v, 1, "pids", base, sizeof base);
        if (rc == 0)
            rc = make_group(base, name, &cg->dirs[SANDBOX_CGROUP_PIDS]);
        if (rc == 0) {
            snprintf(value, sizeof value, "%u", lim->tasks);
            if ((rc = write_at(cg->dirs[SANDBOX_CGROUP_PIDS], "pids.max", value)) < 0)
                return fail(cg, rc, "cannot set %s/pids.max",
                            cg->dirs[SANDBOX_CGROUP_PIDS]);
        } else {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%stasks not limited: %s",
                     n ? ", " : "", rc == -ENOENT ? "no pids hierarchy" : strerror(-rc));
        }
    }
    if (lim->cpus > 0) {
        rc = locate(v, 1, "cpu", base, sizeof base);
        if (rc == 0)
            rc = make_group(base, name, &cg->dirs[SANDBOX_CGROUP_CPU]);
        if (rc == 0) {
            snprintf(value, sizeof value, "%lld",
                     (long long)(lim->cpus * CPU_PERIOD_US + 0.5));
            if ((rc = write_at(cg->dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_period_us",
                               "100000")) < 0 ||
                (rc = write_at(cg->dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_quota_us", value)) <
                    0)
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
    if (!join_path(path, sizeof path, dir, "cgroup.procs"))
        return false;
    char *procs = read_text(path);
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
    read_at(base, "cgroup.subtree_control", have, sizeof have);
    for (const char *p = want; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        p += n + (p[n] == ' ');
        size_t k = strlen(plus);
        if (!has_word(have, word))
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
            rc = write_at(dir, "cgroup.procs", me);
        free(dir);
        if (rc < 0)
            return rc;
    }
    return write_at(base, "cgroup.subtree_control", plus);
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
    read_at(base, "cgroup.controllers", controllers, sizeof controllers);
    bool pids = lim->tasks && has_word(controllers, "pids");
    bool cpu = lim->cpus > 0 && has_word(controllers, "cpu");
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
        if ((rc = write_at(cg->dirs[0], "memory.max", value)) < 0)
            return fail(cg, rc, "cannot set %s/memory.max", cg->dirs[0]);
        rc = write_at(cg->dirs[0], "memory.swap.max", "0");
        if (rc == -ENOENT)
            snprintf(notes, sizeof notes, "swap not accounted");
        else if (rc < 0)
            return fail(cg, rc, "cannot set %s/memory.swap.max", cg->dirs[0]);
    }
    /* The worker is one process: an OOM kill takes all of it, never half. */
    write_at(cg->dirs[0], "memory.oom.group", "1");
    if (pids) {
        snprintf(value, sizeof value, "%u", lim->tasks);
        if ((rc = write_at(cg->dirs[0], "pids.max", value)) < 0)
            return fail(cg, rc, "cannot set %s/pids.max", cg->dirs[0]);
    } else if (lim->tasks) {
        size_t n = strlen(notes);
        snprintf(notes + n, sizeof notes - n, "%stasks not limited: no pids controller",
                 n ? ", " : "");
    }
    if (cpu) {
        snprintf(value, sizeof value, "%lld %d",
                 (long long)(lim->cpus * CPU_PERIOD_US + 0.5), CPU_PERIOD_US);
        if ((rc = write_at(cg->dirs[0], "cpu.max", value)) < 0) {
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
    const struct view v = {self, mountinfo};
    char base[PATH_MAX], name[64];
    snprintf(name, sizeof name, "sandpit-%d-%u", (int)getpid(), seq);
    switch (memory_version(&v, base, sizeof base)) {
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
    struct view v = view_read(texts);
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
    if (!dir || !join_path(path, sizeof path, dir, file))
        return 0;
    char *text = read_text(path);
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

/* --- the worker's view ----------------------------------------------------------------
 */

/* A limit file's value as bytes or a count; false for "max", -1 or a huge v1 value. */
static bool finite_value(const char *dir, const char *file, unsigned long long *v)
{
    char text[64];
    if (read_at(dir, file, text, sizeof text) < 0 || strncmp(text, "max", 3) == 0 ||
        text[0] == '-')
        return false;
    *v = strtoull(text, NULL, 10);
    return *v < (1ull << 62); /* v1 says "no limit" as 9223372036854771712 */
}

/* What the report says of --cpus where nothing enforces it (%g: the CPUs asked for).
 * The time limits still hold (and, with --timeout, the supervisor's budget for threads
 * left running, limits_background.c), but nothing caps the rate at which the worker
 * uses CPUs. */
#define CPUS_UNENFORCED "the CPU cap (--cpus %g) is not enforced on this machine"

/* True if dir is a worker's group (sandpit-<pid>-<seq>), not a supervisor's leaf. */
static bool own_group(const char *dir)
{
    const char *last = strrchr(dir, '/');
    return last && strncmp(last + 1, "sandpit-", 8) == 0 &&
           !strstr(last + 1, "-supervisor");
}

int sandbox__cgroup_check(const struct sandbox_policy *p, struct sandbox_layer *l,
                          bool *memory_counted)
{
    char *texts[2];
    struct view v = view_read(texts);
    int rc = sandbox__cgroup_check_in(p, l, memory_counted, v.self, v.mountinfo);
    free(texts[0]);
    free(texts[1]);
    return rc;
}

int sandbox__cgroup_check_in(const struct sandbox_policy *p, struct sandbox_layer *l,
                             bool *memory_counted, const char *self,
                             const char *mountinfo)
{
    const struct view view = {self, mountinfo};
    char dirs[SANDBOX_CGROUP_NCTL][PATH_MAX];
    *memory_counted = false;
    int version = memory_version(&view, dirs[0], sizeof dirs[0]);
    if (version == 1) {
        for (int i = 1; i < SANDBOX_CGROUP_NCTL; i++)
            if (locate(&view, 1, ctl_names[i], dirs[i], sizeof dirs[i]) < 0)
                dirs[i][0] = 0;
    } else if (version == 2) {
        for (int i = 1; i < SANDBOX_CGROUP_NCTL; i++)
            memcpy(dirs[i], dirs[0], sizeof dirs[0]);
    }
    if (!version || !own_group(dirs[0])) {
        sandbox__layer_set(l, SANDBOX_UNAVAILABLE, "%s",
                           p->cgroup_note && *p->cgroup_note
                               ? p->cgroup_note
                               : "the worker is not in a group of its own");
        if (p->memory_bytes)
            sandbox__layer_note(l, "the memory limit covers private memory only: shared "
                                   "memory and tmpfs are not counted");
        if (p->cpus > 0)
            sandbox__layer_note(
                l, CPUS_UNENFORCED ": no cgroup caps the worker's CPU time", p->cpus);
        return 0;
    }
    const char *last = strrchr(dirs[0], '/');
    char mem[32] = "not limited", tasks[32] = "not limited", cpu[40] = "";
    unsigned long long v, period;
    if (finite_value(dirs[0], version == 1 ? "memory.limit_in_bytes" : "memory.max",
                     &v)) {
        sandbox__format_size(mem, sizeof mem, v);
        *memory_counted = true;
    }
    if (own_group(dirs[SANDBOX_CGROUP_PIDS]) &&
        finite_value(dirs[SANDBOX_CGROUP_PIDS], "pids.max", &v))
        snprintf(tasks, sizeof tasks, "%llu", v);
    if (version == 1 && own_group(dirs[SANDBOX_CGROUP_CPU]) &&
        finite_value(dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_quota_us", &v) &&
        finite_value(dirs[SANDBOX_CGROUP_CPU], "cpu.cfs_period_us", &period) && period)
        snprintf(cpu, sizeof cpu, ", CPU %g", (double)v / (double)period);
    char max[64];
    if (version == 2 && read_at(dirs[0], "cpu.max", max, sizeof max) == 0 &&
        strncmp(max, "max", 3) != 0) {
        unsigned long long q = strtoull(max, NULL, 10);
        const char *sp = strchr(max, ' ');
        period = sp ? strtoull(sp + 1, NULL, 10) : 0;
        if (period)
            snprintf(cpu, sizeof cpu, ", CPU %g", (double)q / (double)period);
    }
    sandbox__layer_set(l, SANDBOX_ACTIVE,
                       "v%d group %s: memory %s (shared memory, tmpfs and page cache "
                       "included), tasks %s%s",
                       version, last + 1, mem, tasks, cpu);
    if (p->cpus > 0 && !cpu[0])
        sandbox__layer_note(l, CPUS_UNENFORCED ": the worker's group has no CPU quota",
                            p->cpus);
    if (p->memory_bytes && !*memory_counted) {
        l->state = SANDBOX_UNAVAILABLE;
        sandbox__layer_note(l, CGROUP_ASAN
                                   ? "no memory limit in an AddressSanitizer build"
                                   : "the memory limit covers private memory only");
    }
    return 0;
}
