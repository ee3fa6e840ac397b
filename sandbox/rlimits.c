/* Resource limits: the first layer, and the only one every Linux has.
 *
 * Soft and hard limits are set to the same value, so user code cannot raise them back
 * (raising a hard limit needs CAP_SYS_RESOURCE, which the worker drops next). A request
 * above the current hard limit is clamped to it: lowering is always allowed, raising
 * is not.
 *
 * Memory is RLIMIT_DATA, not RLIMIT_AS. Since Linux 4.7 RLIMIT_DATA counts private
 * writable mappings: what malloc and anonymous mmap hand out, so a big allocation fails
 * and Python raises MemoryError. RLIMIT_AS would also count address space that is only
 * reserved: glibc's 64 MiB per-thread malloc arenas, PROT_NONE guard regions, every
 * mapped shared library, which fails numpy and OpenBLAS at import under any sensible
 * limit. RLIMIT_DATA still counts thread stacks (8 MiB each by default, touched or not),
 * so the limit must leave room for OpenBLAS's one thread per CPU.
 *
 * RLIMIT_NPROC counts every task (threads too) of the real uid. Outside a user namespace
 * that is every process the user runs on the machine, so a limit there breaks thread
 * creation for anyone with a busy desktop; inside the worker's own user namespace (Linux
 * 5.14+ counts per namespace) it counts the worker's tasks alone. So it is set only
 * there. It never binds uid 0: the kernel exempts the global root user even inside a user
 * namespace (copy_process compares the task's user with INIT_USER), so for root the
 * report says so instead of claiming a limit.
 */
#include "sandbox/internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_ASAN 1
#else
#define SANDBOX_ASAN 0
#endif

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Sets resource to min(want, hard), soft and hard; *got gets the value set. */
static int limit(int resource, rlim_t want, rlim_t *got)
{
    struct rlimit cur;
    if (getrlimit(resource, &cur) < 0)
        return -errno;
    rlim_t v = want;
    if (cur.rlim_max != RLIM_INFINITY && (v == RLIM_INFINITY || v > cur.rlim_max))
        v = cur.rlim_max;
    struct rlimit next = {v, v};
    if (setrlimit(resource, &next) < 0)
        return -errno;
    *got = v;
    return 0;
}

/* The first failure of a series of setrlimit calls. */
struct failure {
    const char *what;
    int rc;
};

static void record(struct failure *f, const char *what, int rc)
{
    if (rc < 0 && !f->what) {
        f->what = what;
        f->rc = rc;
    }
}

int sandbox__rlimits_apply(const struct sandbox_policy *p, struct sandbox_layer *l)
{
    char data[32] = "unlimited", fsize[32] = "unlimited";
    struct failure fail = {NULL, 0};
    rlim_t got, files = 0;
    int rc;

    bool memory_skipped = false;
    if (p->memory_bytes && SANDBOX_ASAN) {
        /* AddressSanitizer reserves terabytes of shadow memory as private writable
         * mappings: under RLIMIT_DATA it cannot even start. Said, not claimed. */
        memory_skipped = true;
    } else if (p->memory_bytes) {
        record(&fail, "data", rc = limit(RLIMIT_DATA, (rlim_t)p->memory_bytes, &got));
        if (rc == 0)
            sandbox__format_size(data, sizeof data, got);
    }
    if (p->max_file_bytes) {
        record(&fail, "fsize", rc = limit(RLIMIT_FSIZE, (rlim_t)p->max_file_bytes, &got));
        if (rc == 0)
            sandbox__format_size(fsize, sizeof fsize, got);
    }
    unsigned want_files =
        p->max_open_files ? p->max_open_files : SANDBOX_DEFAULT_OPEN_FILES;
    record(&fail, "nofile", limit(RLIMIT_NOFILE, want_files, &files));
    record(&fail, "core", limit(RLIMIT_CORE, 0, &got));
    /* No real-time scheduling: SCHED_FIFO in a busy loop would starve the machine. */
    record(&fail, "rtprio", limit(RLIMIT_RTPRIO, 0, &got));

    if (fail.what) {
        sandbox__layer_set(l, SANDBOX_FAILED, "setrlimit(%s): %s", fail.what,
                           strerror(-fail.rc));
        return fail.rc;
    }
    sandbox__layer_set(l, SANDBOX_ACTIVE,
                       "data %s, file size %s, open files %llu, core 0", data, fsize,
                       (unsigned long long)files);
    if (memory_skipped)
        sandbox__layer_note(l, "memory limit not applied: this is an AddressSanitizer "
                               "build, whose shadow memory counts as data");
    return 0;
}

int sandbox__rlimits_limit_tasks(struct sandbox_layer *l, bool own_userns)
{
    if (l->state != SANDBOX_ACTIVE)
        return 0;
    if (!own_userns) {
        sandbox__layer_note(l, "tasks not limited (outside a user namespace the limit "
                               "would count every process of the user)");
        return 0;
    }
    if (getuid() == 0) {
        sandbox__layer_note(l, "tasks not limited (root is exempt from RLIMIT_NPROC)");
        return 0;
    }
    rlim_t got;
    int rc = limit(RLIMIT_NPROC, SANDBOX_MAX_TASKS, &got);
    if (rc < 0) {
        sandbox__layer_set(l, SANDBOX_FAILED, "setrlimit(nproc): %s", strerror(-rc));
        return rc;
    }
    sandbox__layer_note(l, "tasks %llu", (unsigned long long)got);
    return 0;
}
