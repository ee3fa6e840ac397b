/* cgroup_check: the worker's check of the group it is in, for its report
 * (sandbox.h: the "cgroup" layer), made before its other layers: which group,
 * and what its files say it limits, so that the report never claims a limit
 * the kernel does not enforce. A worker outside a group of its own (a
 * supervisor's leaf, the session's group) reports the layer unavailable, with
 * the supervisor's note (SANDPIT_CGROUP) saying why. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/cgroup_view.h"
#include "sandbox/internal.h"
#include "sandbox/kfile.h"

/* A limit file's value as bytes or a count; false for "max", -1 or a huge v1 value. */
static bool finite_value(const char *dir, const char *file, unsigned long long *v)
{
    char text[64];
    if (kfile_read_line_at(dir, file, text, sizeof text) < 0 ||
        strncmp(text, "max", 3) == 0 || text[0] == '-')
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
    struct cgroup_view v = cgroup_view_read(texts);
    int rc = sandbox__cgroup_check_in(p, l, memory_counted, v.self, v.mountinfo);
    free(texts[0]);
    free(texts[1]);
    return rc;
}

int sandbox__cgroup_check_in(const struct sandbox_policy *p, struct sandbox_layer *l,
                             bool *memory_counted, const char *self,
                             const char *mountinfo)
{
    const struct cgroup_view view = {self, mountinfo};
    char dirs[SANDBOX_CGROUP_NCTL][PATH_MAX];
    *memory_counted = false;
    int version = cgroup_view_memory_version(&view, dirs[0], sizeof dirs[0]);
    if (version == 1) {
        for (int i = 1; i < SANDBOX_CGROUP_NCTL; i++)
            if (cgroup_view_locate(&view, 1, cgroup_ctl_names[i], dirs[i],
                                   sizeof dirs[i]) < 0)
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
    if (version == 2 && kfile_read_line_at(dirs[0], "cpu.max", max, sizeof max) == 0 &&
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
