/* Unit tests for sandbox/cgroup.c (with cgroup_view.c and cgroup_check.c) on
 * cgroup v2, which the build machines (v1) do not have: a temporary folder laid
 * out like a cgroup2 mount stands in for /sys/fs/cgroup, and the texts of
 * /proc/self/cgroup and /proc/self/mountinfo that those files read are given so that they
 * point into it (sandbox__cgroup_create_in, sandbox__cgroup_check_in). The code under
 * test is the one the supervisor runs; only the root of the hierarchy is chosen here.
 *
 * What a folder cannot do, the test does in the kernel's place, and says so where it
 * does: making a group's interface files when the group is made (they are made here
 * beforehand; mkdir of an existing folder is what cgroup.c accepts), and letting a
 * group with its interface files be removed with rmdir (the test takes the files away
 * before the group is removed). Every file starts empty, so what a test reads back is
 * exactly what cgroup.c wrote, or nothing.
 */
#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "testing.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define MIB (1ull << 20)

/* A cgroup2 mount at root, with the kernel's group "kernel" in it (base). */
struct fake {
    char root[64];
    char base[128];
    char self[256];      /* the text of /proc/self/cgroup */
    char mountinfo[512]; /* the text of /proc/self/mountinfo */
};

/* dir/name into buf, which it must fit. */
static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    REQUIRE(n > 0 && (size_t)n < len);
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, name);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    REQUIRE(fclose(f) == 0);
}

/* What dir/name holds ("(none)" if there is no such file); borrowed until the next
 * call. */
static const char *got(const char *dir, const char *name)
{
    static char text[512];
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return "(none)";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static bool exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, name);
    return access(path, F_OK) == 0;
}

/* The supervisor's group in /proc/self/cgroup's terms: "/kernel" or a folder in it. */
static void fake_in(struct fake *f, const char *group)
{
    snprintf(f->self, sizeof f->self, "0::%s\n", group);
}

/* The kernel's group holds controllers (its cgroup.controllers: what its parent hands
 * down) and procs (its cgroup.procs); nothing is handed further down yet. */
static void fake_init(struct fake *f, const char *controllers, const char *procs)
{
    snprintf(f->root, sizeof f->root, "/tmp/sandpit-cgroup2-XXXXXX");
    REQUIRE(mkdtemp(f->root) != NULL);
    testing_remove_after(f->root);
    snprintf(f->base, sizeof f->base, "%s/kernel", f->root);
    REQUIRE(mkdir(f->base, 0755) == 0);
    put(f->base, "cgroup.controllers", controllers);
    put(f->base, "cgroup.subtree_control", "");
    put(f->base, "cgroup.procs", procs);
    fake_in(f, "/kernel");
    snprintf(f->mountinfo, sizeof f->mountinfo,
             "25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
             "30 25 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
             "rw,nsdelegate,memory_recursiveprot\n",
             f->root);
}

/* The files a v2 group has with these controllers enabled above it, all empty: what
 * the kernel makes with the group (the folder path; name is relative to base). */
static void fake_group(const struct fake *f, const char *name, const char *controllers,
                       char *path, size_t len)
{
    path_in(path, len, f->base, name);
    REQUIRE(mkdir(path, 0755) == 0);
    put(path, "cgroup.procs", "");
    put(path, "cgroup.controllers", controllers);
    put(path, "cgroup.subtree_control", "");
    if (strstr(controllers, "memory")) {
        put(path, "memory.max", "");
        put(path, "memory.swap.max", "");
        put(path, "memory.oom.group", "");
        put(path, "memory.events", "");
    }
    if (strstr(controllers, "pids"))
        put(path, "pids.max", "");
    if (strstr(controllers, "cpu"))
        put(path, "cpu.max", "");
}

/* The name cgroup.c gives the group of a worker: sandpit-<supervisor pid>-<seq>. */
static void worker_name(char *buf, size_t len, unsigned seq)
{
    snprintf(buf, len, "sandpit-%d-%u", (int)getpid(), seq);
}

static int create(const struct fake *f, struct sandbox_cgroup *cg, unsigned seq,
                  uint64_t memory, unsigned tasks, double cpus)
{
    struct sandbox_cgroup_limits lim = {memory, tasks, cpus};
    int rc = sandbox__cgroup_create_in(cg, seq, &lim, f->self, f->mountinfo);
    fprintf(stderr, "    create: %d, %s\n", rc, cg->detail);
    return rc;
}

/* --- the limits -------------------------------------------------------------------- */

/* memory.max is the limit for --memory (the memory plus an eighth, at least 64 MiB more),
 * swap is closed, pids.max is the task limit, cpu.max is the quota over a 100 ms period,
 * and an OOM kill takes the whole group. */
static void test_v2_limits_are_written(void)
{
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    fake_init(&f, "cpuset cpu io memory hugetlb pids rdma misc\n", "");
    worker_name(name, sizeof name, 7);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);

    REQUIRE(create(&f, &cg, 7, 256 * MIB, 64, 0.5) == 0);
    CHECK_INT(cg.version, 2);
    CHECK_STR(cg.dirs[SANDBOX_CGROUP_MEMORY], group);
    /* one group holds every controller on v2 */
    CHECK(cg.dirs[SANDBOX_CGROUP_PIDS] == NULL && cg.dirs[SANDBOX_CGROUP_CPU] == NULL);
    CHECK_STR(got(group, "memory.max"), UNDER_ASAN ? "" : "335544320");
    CHECK_STR(got(group, "memory.swap.max"), UNDER_ASAN ? "" : "0");
    CHECK_STR(got(group, "memory.oom.group"), "1");
    CHECK_STR(got(group, "pids.max"), "64");
    CHECK_STR(got(group, "cpu.max"), "50000 100000");
    /* the child joins through the file opened now, before fork */
    CHECK(cg.procs[0] >= 0 && cg.procs[1] == -1 && cg.procs[2] == -1);
    char want[256];
    snprintf(want, sizeof want, "made %s (v2): memory %s, tasks 64, 0.5 CPU", name,
             UNDER_ASAN ? "no limit" : "320 MiB");
    CHECK_STR(cg.detail, want);
    sandbox_cgroup_release(&cg);

    /* 2 GiB asks for an eighth more; 1.5 CPUs is 150 ms per 100 ms */
    worker_name(name, sizeof name, 8);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 8, 2048 * MIB, 1024, 1.5) == 0);
    CHECK_STR(got(group, "memory.max"), UNDER_ASAN ? "" : "2415919104");
    CHECK_STR(got(group, "pids.max"), "1024");
    CHECK_STR(got(group, "cpu.max"), "150000 100000");
    sandbox_cgroup_release(&cg);

    /* nothing asked, nothing written: the kernel's defaults ("max") stay */
    worker_name(name, sizeof name, 9);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 9, 0, 0, 0) == 0);
    CHECK_STR(got(group, "memory.max"), "");
    CHECK_STR(got(group, "memory.swap.max"), "");
    CHECK_STR(got(group, "pids.max"), "");
    CHECK_STR(got(group, "cpu.max"), "");
    sandbox_cgroup_release(&cg);
}

/* A kernel without swap accounting has no memory.swap.max: the group is made, and its
 * detail says so. */
static void test_v2_without_swap_accounting(void)
{
    if (UNDER_ASAN)
        testing_skip("an AddressSanitizer build has no memory limit, so no swap limit "
                     "either");
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    fake_init(&f, "cpu memory pids\n", "");
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    char swap[PATH_MAX];
    path_in(swap, sizeof swap, group, "memory.swap.max");
    REQUIRE(unlink(swap) == 0);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0) == 0);
    CHECK_STR(got(group, "memory.max"), "335544320");
    CHECK(strstr(cg.detail, "; swap not accounted") != NULL);
    sandbox_cgroup_release(&cg);
}

/* --- handing the controllers down ------------------------------------------------------
 */

/* The controllers are enabled in the parent's cgroup.subtree_control (the kernel's
 * group, not the worker's), with a "+" each, in one write, and only those asked for. */
static void test_v2_controllers_are_enabled_in_the_parent(void)
{
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    fake_init(&f, "cpuset cpu io memory pids\n", "");
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +pids +cpu");
    CHECK_STR(got(group, "cgroup.subtree_control"), "");
    sandbox_cgroup_release(&cg);

    /* no --cpus: the cpu controller is not asked for */
    fake_init(&f, "cpuset cpu io memory pids\n", "");
    fake_group(&f, name, "memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +pids");
    sandbox_cgroup_release(&cg);
}

/* Only what the parent has (its cgroup.controllers) can be enabled: writing another
 * fails the whole write on a real v2. Without cpu, the group is made without a quota,
 * and says so; without memory, no group is made and nothing is written. */
static void test_v2_only_controllers_the_parent_has(void)
{
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    worker_name(name, sizeof name, 1);

    fake_init(&f, "io memory pids\n", "");
    fake_group(&f, name, "memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +pids");
    CHECK(!exists(group, "cpu.max"));
    CHECK(strstr(cg.detail, "CPU not limited: no cpu controller") != NULL);
    CHECK(strstr(cg.detail, " CPU,") == NULL && strstr(cg.detail, "0.5 CPU") == NULL);
    sandbox_cgroup_release(&cg);

    fake_init(&f, "cpu memory\n", "");
    fake_group(&f, name, "cpu memory", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +cpu");
    CHECK(strstr(cg.detail, "tasks not limited: no pids controller") != NULL);
    sandbox_cgroup_release(&cg);

    fake_init(&f, "cpu pids\n", "");
    CHECK_INT(create(&f, &cg, 1, 256 * MIB, 64, 0.5), -ENOENT);
    CHECK(cg.version == 0 && cg.dirs[0] == NULL);
    CHECK(strstr(cg.detail, "no cgroup hierarchy with the memory controller") != NULL);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "");
    CHECK(!exists(f.base, name));
}

/* What the parent already hands down is not written again. The kernel lists them
 * without "+", as it does in cgroup.subtree_control. */
static void test_v2_controllers_already_enabled_are_left(void)
{
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    worker_name(name, sizeof name, 1);

    fake_init(&f, "cpu memory pids\n", "");
    put(f.base, "cgroup.subtree_control", "cpu memory pids\n");
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "cpu memory pids\n");
    sandbox_cgroup_release(&cg);

    fake_init(&f, "cpu memory pids\n", "");
    put(f.base, "cgroup.subtree_control", "memory\n");
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+pids +cpu");
    sandbox_cgroup_release(&cg);
}

/* A v2 group other than the root cannot hand controllers down while it holds a
 * process. A supervisor alone in its group (a scope, a container) first moves into a
 * leaf of its own, sandpit-<pid>-supervisor; one that shares it does not (the kernel
 * then refuses the write with EBUSY, which a folder cannot). Its later workers' groups
 * are made beside that leaf, in the kernel's group, not inside the leaf. */
static void test_v2_supervisor_alone_moves_into_a_leaf(void)
{
    struct fake f;
    char group[PATH_MAX], name[64], leaf[PATH_MAX], me[32];
    struct sandbox_cgroup cg;
    snprintf(me, sizeof me, "%d\n", (int)getpid());

    fake_init(&f, "cpu memory pids\n", me);
    snprintf(leaf, sizeof leaf, "%s/sandpit-%d-supervisor", f.base, (int)getpid());
    REQUIRE(mkdir(leaf, 0755) == 0);
    put(leaf, "cgroup.procs", ""); /* the kernel's part of the leaf */
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    snprintf(me, sizeof me, "%d", (int)getpid());
    CHECK_STR(got(leaf, "cgroup.procs"), me);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +pids +cpu");
    CHECK_STR(cg.dirs[0], group);
    sandbox_cgroup_release(&cg);

    /* the next worker: the supervisor is in its leaf now, as the kernel would show */
    put(f.base, "cgroup.procs", "");
    put(f.base, "cgroup.subtree_control", "memory pids cpu\n");
    put(leaf, "cgroup.procs", me);
    put(leaf, "cgroup.controllers", "cpu memory pids\n");
    char in_leaf[128];
    snprintf(in_leaf, sizeof in_leaf, "/kernel/sandpit-%d-supervisor", (int)getpid());
    fake_in(&f, in_leaf);
    worker_name(name, sizeof name, 2);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 2, 256 * MIB, 64, 0.5) == 0);
    CHECK_STR(cg.dirs[0], group);
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "memory pids cpu\n");
    CHECK_STR(got(group, "pids.max"), "64");
    sandbox_cgroup_release(&cg);

    /* shared with another process: no leaf, the write is the kernel's to refuse */
    char shared[64];
    snprintf(shared, sizeof shared, "%d\n1\n", (int)getpid());
    fake_init(&f, "cpu memory pids\n", shared);
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0) == 0);
    snprintf(leaf, sizeof leaf, "sandpit-%d-supervisor", (int)getpid());
    CHECK(!exists(f.base, leaf));
    CHECK_STR(got(f.base, "cgroup.subtree_control"), "+memory +pids");
    sandbox_cgroup_release(&cg);
}

/* --- the worker in it, and the end -----------------------------------------------------
 */

/* The child joins through the descriptor opened before fork (it writes "0": itself),
 * the supervisor closes it, reads the OOM count from memory.events, and removes the
 * group once the worker has ended. Groups of supervisors that are gone are removed
 * when the next group is made. */
static void test_v2_group_is_removed_at_the_end(void)
{
    struct fake f;
    char group[PATH_MAX], name[64], stale[PATH_MAX];
    struct sandbox_cgroup cg;
    fake_init(&f, "cpu memory pids\n", "");
    /* a supervisor that was killed outright left a group: its pid is gone */
    pid_t gone = fork();
    REQUIRE(gone >= 0);
    if (gone == 0)
        _exit(0);
    REQUIRE(waitpid(gone, NULL, 0) == gone);
    snprintf(stale, sizeof stale, "%s/sandpit-%d-3", f.base, (int)gone);
    REQUIRE(mkdir(stale, 0755) == 0);

    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0.5) == 0);
    CHECK(access(stale, F_OK) < 0 && errno == ENOENT);

    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(sandbox_cgroup_join(&cg) == 0 ? 0 : 1);
    sandbox_cgroup_started(&cg, pid);
    CHECK(cg.pid == pid && cg.procs[0] == -1);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR(got(group, "cgroup.procs"), "0");

    put(group, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\n");
    CHECK(!sandbox_cgroup_memory_killed(&cg));
    put(group, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n");
    CHECK(sandbox_cgroup_memory_killed(&cg));

    /* a real group goes with its files; a folder needs them taken away first */
    static const char *const files[] = {
        "cgroup.procs",  "cgroup.controllers", "cgroup.subtree_control",
        "memory.max",    "memory.swap.max",    "memory.oom.group",
        "memory.events", "pids.max",           "cpu.max",
    };
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        path_in(path, sizeof path, group, files[i]);
        REQUIRE(unlink(path) == 0);
    }
    CHECK_INT(sandbox_cgroup_remove(&cg), 0);
    CHECK(access(group, F_OK) < 0 && errno == ENOENT);
    CHECK(access(f.base, F_OK) == 0); /* the kernel's group stays */
    CHECK(cg.version == 0 && cg.pid == 0 && cg.dirs[0] == NULL);
    sandbox_cgroup_release(&cg);
}

/* A group that still holds a task cannot be removed (here: a file left in it): the
 * supervisor keeps its path and tries again once the worker is reaped. */
static void test_v2_group_still_in_use_is_kept(void)
{
    struct fake f;
    char group[PATH_MAX], name[64];
    struct sandbox_cgroup cg;
    fake_init(&f, "cpu memory pids\n", "");
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    REQUIRE(create(&f, &cg, 1, 256 * MIB, 64, 0) == 0);
    CHECK(sandbox_cgroup_remove(&cg) < 0);
    CHECK_STR(cg.dirs[0], group);
    CHECK_INT(cg.version, 2);
    sandbox_cgroup_release(&cg);
}

/* The worker's own check reads its group's files back (never what was asked). */
static void test_v2_worker_reports_its_group(void)
{
    struct fake f;
    char group[PATH_MAX], name[64], where[128];
    fake_init(&f, "cpu memory pids\n", "");
    worker_name(name, sizeof name, 7);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    put(group, "memory.max", "335544320\n");
    put(group, "pids.max", "1024\n");
    put(group, "cpu.max", "50000 100000\n");
    snprintf(where, sizeof where, "/kernel/%s", name);
    fake_in(&f, where);

    struct sandbox_policy p;
    struct sandbox_layer l = {"cgroup", SANDBOX_PENDING, ""};
    bool counted = false;
    sandbox_policy_init(&p);
    p.memory_bytes = 256 * MIB;
    p.cpus = 0.5;
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    fprintf(stderr, "    %s: %s\n", sandbox_state_name(l.state), l.detail);
    CHECK_INT(l.state, SANDBOX_ACTIVE);
    CHECK(counted);
    char want[256];
    snprintf(want, sizeof want,
             "v2 group %s: memory 320 MiB (shared memory, tmpfs and page cache "
             "included), tasks 1024, CPU 0.5",
             name);
    CHECK_STR(l.detail, want);

    /* no limit in the file: the report does not claim one */
    put(group, "memory.max", "max\n");
    put(group, "cpu.max", "max 100000\n");
    l.state = SANDBOX_PENDING;
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    CHECK(!counted && l.state == SANDBOX_UNAVAILABLE);
    CHECK(strstr(l.detail, "memory not limited") != NULL);
    CHECK(strstr(l.detail, "CPU 0.5") == NULL);

    /* the supervisor's leaf is not a worker's group */
    snprintf(where, sizeof where, "/kernel/sandpit-%d-supervisor", (int)getpid());
    char leaf[PATH_MAX];
    snprintf(leaf, sizeof leaf, "%s/sandpit-%d-supervisor", f.base, (int)getpid());
    REQUIRE(mkdir(leaf, 0755) == 0);
    put(leaf, "cgroup.controllers", "cpu memory pids\n");
    fake_in(&f, where);
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    CHECK(!counted && l.state == SANDBOX_UNAVAILABLE);
}

/* --cpus where no group enforces it: the report says the cap is not enforced, as it
 * says that the memory limit covers private memory only (the worker is in the
 * kernel's group, or in a group without a CPU quota). */
static void test_cpus_not_enforced_is_said(void)
{
    struct fake f;
    char group[PATH_MAX], name[64], where[128];
    struct sandbox_policy p;
    struct sandbox_layer l = {"cgroup", SANDBOX_PENDING, ""};
    bool counted;
    const char *said = "the CPU cap (--cpus 0.5) is not enforced on this machine";
    fake_init(&f, "cpu memory pids\n", "");
    sandbox_policy_init(&p);
    p.memory_bytes = 256 * MIB;
    p.cgroup_note = "cannot hand the memory controller down from /kernel: Device or "
                    "resource busy";

    /* no group of its own: in the kernel's */
    p.cpus = 0.5;
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    fprintf(stderr, "    %s: %s\n", sandbox_state_name(l.state), l.detail);
    CHECK_INT(l.state, SANDBOX_UNAVAILABLE);
    CHECK(strstr(l.detail, p.cgroup_note) == l.detail);
    CHECK(strstr(l.detail, "covers private memory only") != NULL);
    CHECK(strstr(l.detail, said) != NULL);
    p.cpus = 0;
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    CHECK(strstr(l.detail, "CPU cap") == NULL);

    /* a group of its own, without a CPU quota (no cpu controller, or max) */
    worker_name(name, sizeof name, 1);
    fake_group(&f, name, "cpu memory pids", group, sizeof group);
    put(group, "memory.max", "335544320\n");
    put(group, "pids.max", "1024\n");
    put(group, "cpu.max", "max 100000\n");
    snprintf(where, sizeof where, "/kernel/%s", name);
    fake_in(&f, where);
    p.cpus = 0.5;
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    fprintf(stderr, "    %s: %s\n", sandbox_state_name(l.state), l.detail);
    CHECK(strstr(l.detail, said) != NULL);
    /* with the quota in force, nothing to say */
    put(group, "cpu.max", "50000 100000\n");
    CHECK_INT(sandbox__cgroup_check_in(&p, &l, &counted, f.self, f.mountinfo), 0);
    CHECK(strstr(l.detail, "CPU 0.5") != NULL && strstr(l.detail, "CPU cap") == NULL);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_v2_limits_are_written),
    TESTING_CASE(test_v2_without_swap_accounting),
    TESTING_CASE(test_v2_controllers_are_enabled_in_the_parent),
    TESTING_CASE(test_v2_only_controllers_the_parent_has),
    TESTING_CASE(test_v2_controllers_already_enabled_are_left),
    TESTING_CASE(test_v2_supervisor_alone_moves_into_a_leaf),
    TESTING_CASE(test_v2_group_is_removed_at_the_end),
    TESTING_CASE(test_v2_group_still_in_use_is_kept),
    TESTING_CASE(test_v2_worker_reports_its_group),
    TESTING_CASE(test_cpus_not_enforced_is_said),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
