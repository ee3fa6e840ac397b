/* sandbox: confines the worker, the process that runs user cells.
 *
 * The supervisor puts the worker in a cgroup of its own before it runs (cgroup.h). The
 * worker calls sandbox_enter() while it has one thread and no Python (a check of that
 * cgroup, rlimits, namespaces, capabilities, Landlock), then sandbox_lock() once CPython
 * and its preloads are up (no_new_privs and the seccomp filter, on every thread). Each
 * step fills a layer of a struct sandbox_report, which never claims a layer that is not
 * in force.
 * Ownership: the policy and its strings are borrowed for the duration of a call; the
 * report is the caller's; nothing here allocates memory that outlives a call.
 * sandbox/POLICY.md is the table of what is allowed and denied, and why.
 */
#ifndef SANDPIT_SANDBOX_H
#define SANDPIT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>

/* What the worker may do. Paths are absolute; lists are NULL-terminated and may be NULL.
 */
struct sandbox_policy {
    bool enabled;             /* --sandbox off: apply nothing, every layer "disabled" */
    bool network;             /* --network on: TCP/UDP over IPv4/IPv6, host network */
    const char *workspace;    /* read-write; may be NULL */
    const char *tmpdir;       /* private temporary folder, read-write; may be NULL */
    const char *private_root; /* the user's folder of every kernel's private folders,
                               * tmpdir's parent: hidden but for tmpdir; may be NULL */
    const char *const *ro_paths; /* extra read-only paths (a venv, ~/.local/lib/...) */
    const char *const *rw_paths; /* extra read-write paths */
    const char *const *hidden_paths; /* files or folders that must stay unreadable even
                                      * inside the workspace (the connection file): in the
                                      * worker's mount namespace each is covered by an
                                      * empty one; sandbox_enter() fails if one is still
                                      * readable afterwards */
    const char *const
        *readonly_paths;          /* inside the read-write paths, but never written
                                   * (kernelspecs, start-up files): bound read-only */
    const char *const *home_dirs; /* home folders inside the read-write paths: the top
                                   * level is read-only, but for its entries that are
                                   * not dot-files (see home.h) */
    uint64_t memory_bytes;        /* RLIMIT_DATA, and the cgroup's; 0: no limit */
    uint64_t max_file_bytes;      /* RLIMIT_FSIZE; 0: no limit */
    unsigned max_open_files;      /* RLIMIT_NOFILE; 0: SANDBOX_DEFAULT_OPEN_FILES */
    double cpus;                  /* the cgroup's CPU quota, in CPUs; 0: no limit */
    const char *cgroup_note;      /* what the supervisor said of the worker's cgroup (what
                                   * it made, or why it made none); may be NULL */
    struct sandbox_trial *trial;  /* the namespaces' trial, started early; NULL: stage 1
                                   * makes its own */
};

/* Before a user namespace is entered for good, stage 1 tries it in a child that then
 * exits: a worker stuck in a namespace whose maps cannot be written must not go on.
 * The trial forks the process and makes a network namespace, some 3.5 ms of a worker's
 * start when done in stage 1, by which time CPython makes the process large; started
 * at the top of main instead, before CPython, it runs beside the interpreter's start. */
struct sandbox_trial {
    pid_t pid;     /* the child trying, until it is reaped; 0 */
    int fd;        /* its answer comes here; -1 */
    int flags;     /* what it tries: CLONE_NEWUSER and the namespaces of the policy */
    int err;       /* its answer: 0 when it worked, else the errno */
    bool unshared; /* the failure came after unshare(), while writing the maps */
    bool done;     /* the answer is in err and unshared */
};

/* Starts the trial of the namespaces that a policy with this network setting enters.
 * If the child cannot be started, the trial tries nothing (flags 0), and stage 1 makes
 * its own. A process that forks after starting one finishes it first: the child is
 * its own, not its forks'. */
void sandbox_trial_start(struct sandbox_trial *t, bool network);

/* Waits for the trial's answer (once; later calls return at once). */
void sandbox_trial_finish(struct sandbox_trial *t);

#define SANDBOX_DEFAULT_OPEN_FILES 256
/* The cgroup's pids.max, and RLIMIT_NPROC where that counts the worker's own tasks (its
 * user namespace). */
#define SANDBOX_MAX_TASKS 1024

enum sandbox_state {
    SANDBOX_PENDING,     /* its stage has not run yet */
    SANDBOX_ACTIVE,      /* in force */
    SANDBOX_UNAVAILABLE, /* the machine cannot provide it; detail says why */
    SANDBOX_DISABLED,    /* turned off by the policy */
    SANDBOX_FAILED,      /* could not be applied as the policy asks; detail says why */
};

/* The layers, in the order they are applied and reported. */
enum sandbox_layer_id {
    SANDBOX_LAYER_CGROUP,
    SANDBOX_LAYER_RLIMITS,
    SANDBOX_LAYER_USERNS,
    SANDBOX_LAYER_NETNS,
    SANDBOX_LAYER_MOUNTNS,
    SANDBOX_LAYER_CAPS,
    SANDBOX_LAYER_LANDLOCK,
    SANDBOX_LAYER_SECCOMP,
    SANDBOX_LAYER_COUNT,
};

#define SANDBOX_LAYERS_MAX 8
#define SANDBOX_DETAIL_MAX 1024

struct sandbox_layer {
    const char *name; /* "cgroup", "rlimits", "user-namespace", "network-namespace",
                       * "mount-namespace", "capabilities", "landlock", "seccomp" */
    enum sandbox_state state;
    char detail[SANDBOX_DETAIL_MAX];
};

/* layers[] is indexed by enum sandbox_layer_id. */
struct sandbox_report {
    struct sandbox_layer layers[SANDBOX_LAYERS_MAX];
    size_t n;
    int landlock_abi;   /* 0: no Landlock */
    bool cgroup_memory; /* a cgroup's memory limit counts shared memory and tmpfs */
};

/* Fills p with the defaults: enabled, no network, no paths, no memory or file-size
 * limit, SANDBOX_DEFAULT_OPEN_FILES open files. */
void sandbox_policy_init(struct sandbox_policy *p);

/* The user's folder of every kernel's private folders in parent (an absolute
 * path): parent/sandpit-user-<uid>, into out. The supervisor makes it
 * (kernel/supervisor/tmpdir.c); every worker covers it. 0, or -EINVAL for a
 * relative or missing parent, -ENAMETOOLONG. */
int sandbox_private_root(const char *parent, char *out, size_t len);

/* Names every layer and sets it SANDBOX_PENDING. sandbox_enter() and sandbox_lock() call
 * it themselves on a report whose n is 0. */
void sandbox_report_init(struct sandbox_report *r);

/* Stage 1, in the worker before Py_Initialize, while the process has exactly one thread:
 * a check of the cgroup the worker is in; rlimits; a user namespace (uid and gid mapped
 * to themselves) with an empty network namespace unless p->network, and a mount namespace
 * in which everything outside the read-write paths is read-only and p->hidden_paths are
 * covered (and, where no cgroup counts tmpfs, a temporary folder on tmpfs is replaced by
 * a small one); all capabilities dropped; no_new_privs; Landlock. A layer the machine
 * lacks is reported unavailable and the others still apply. Returns 0, or the -errno of
 * the first layer that FAILED (the others were still applied; the worker should not run
 * user code). -EINVAL if the process has more than one thread (nothing is applied then).
 */
int sandbox_enter(const struct sandbox_policy *p, struct sandbox_report *r);

/* Stage 2, after CPython is initialised and its preloads imported: no_new_privs and the
 * seccomp filter, synchronised to every thread (refusing anonymous shared mappings when
 * there is a memory limit and no cgroup counts them). Returns 0 or -errno (seccomp
 * FAILED). */
int sandbox_lock(const struct sandbox_policy *p, struct sandbox_report *r);

/* "pending", "active", "unavailable", "disabled", "failed" (static strings). */
const char *sandbox_state_name(enum sandbox_state s);

/* The layer called name, or NULL (borrowed from r). */
const struct sandbox_layer *sandbox_report_find(const struct sandbox_report *r,
                                                const char *name);

/* Writes one line per layer to f: "sandbox: <layer> <state>: <detail>". */
void sandbox_report_print(const struct sandbox_report *r, FILE *f);

/* Runs both stages in a forked child (which then exits), in a cgroup made for it as the
 * supervisor makes one for a worker, and fills r with what this machine gives the
 * policy; for `sandpit check-sandbox`. Returns 0 (whatever the layers say) or -errno if
 * the child could not run or report. */
int sandbox_probe(const struct sandbox_policy *p, struct sandbox_report *r);

#endif
