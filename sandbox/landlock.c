/* Landlock: which files the worker may read and write, and (ABI 4+) no TCP, (ABI 6+) no
 * signals or abstract UNIX sockets outside its own domain.
 *
 * Landlock is allow-listing: once a ruleset handles an access right, only the paths that
 * a rule grants it beneath get it. The ruleset handles every right the running ABI knows
 * (a right the kernel does not know is simply not restricted: REFER from ABI 2, TRUNCATE
 * from 3, IOCTL_DEV from 5; on ABI 1 linking or renaming across folders is always
 * denied), so the three lists below are all the worker can reach:
 *
 *   read-only, executable  /usr, /lib*, /bin and the policy's ro_paths. "Executable"
 *                          matters only before the seccomp filter (pandas runs `uname -p`
 *                          at import); mmap(PROT_EXEC) of a shared library is governed by
 *                          READ_FILE, not EXECUTE.
 *   read-only              the few /etc files glibc, Python, matplotlib and fontconfig
 *                          read, CPU topology under /sys, and /proc/self.
 *   read-write             the workspace, the private tmpdir and the policy's rw_paths,
 *                          with every right but EXECUTE and MAKE_CHAR/MAKE_BLOCK;
 * /dev/null, /dev/zero and /dev/full.
 *
 * Rules are made on what a path resolves to when the rule is added (an O_PATH open
 * follows symlinks: /lib -> /usr/lib, /etc/localtime -> /usr/share/zoneinfo/...). So the
 * rule for /proc/self lands on /proc/<worker pid>: it covers the worker and its threads
 * (/proc/thread-self is /proc/<pid>/task/<tid>, beneath it), but no child process, and it
 * would be wrong in any process other than the one that made it, which is why this runs
 * in the worker itself. Other processes' /proc entries stay unreadable; Landlock's own
 * ptrace rule also keeps the worker out of the supervisor's /proc/<pid>/mem and environ.
 *
 * Before ABI 8, landlock_restrict_self() binds only the calling thread: this runs while
 * the worker has exactly one, and every thread created later inherits the domain.
 */
#include "sandbox/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian 12's headers stop at ABI 2 or 3; these are the kernel's values. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0) /* ABI 4 */
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1) /* ABI 6 */
#endif
/* enum landlock_rule_type in newer headers; unused here (no port is allowed) but named
 * so that the ABI 4 constants are all in one place. */
#define SANDBOX_LANDLOCK_RULE_NET_PORT 2

/* struct landlock_ruleset_attr as of ABI 6; the size passed tells the kernel which
 * fields the running ABI reads. */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

#define FS_ABI1 ((1ULL << 13) - 1) /* EXECUTE ... MAKE_SYM */
#define FS_FILE_RIGHTS                                                                   \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                        \
     LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                        \
     LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define RO      (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define RO_EXEC (RO | LANDLOCK_ACCESS_FS_EXECUTE)
#define DEV_RW                                                                           \
    (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |                      \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* Read-write: all but running programs and making device nodes. */
#define RW_EXCLUDED                                                                      \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                         \
     LANDLOCK_ACCESS_FS_MAKE_BLOCK)

struct rule {
    const char *path;
    uint64_t access;
};

/* What the interpreter and its usual libraries read; missing ones are skipped. */
static const struct rule system_rules[] = {
    {"/usr", RO_EXEC},
    {"/lib", RO_EXEC},
    {"/lib64", RO_EXEC},
    {"/lib32", RO_EXEC},
    {"/libx32", RO_EXEC},
    {"/bin", RO_EXEC},
    {"/etc/ld.so.cache", RO},
    {"/etc/ld.so.preload", RO},
    {"/etc/locale.alias", RO}, /* /usr/share/locale/locale.alias links here */
    {"/etc/localtime", RO},
    {"/etc/timezone", RO},
    {"/etc/nsswitch.conf", RO},
    {"/etc/passwd", RO},
    {"/etc/group", RO},
    {"/etc/host.conf", RO},
    {"/etc/hosts", RO},
    {"/etc/resolv.conf", RO},
    {"/etc/gai.conf", RO},
    {"/etc/services", RO},
    {"/etc/protocols", RO},
    {"/etc/mime.types", RO},
    {"/etc/matplotlibrc", RO},
    {"/etc/fonts", RO},
    {"/etc/ssl/certs", RO}, /* not /etc/ssl: /etc/ssl/private holds keys */
    {"/etc/ssl/openssl.cnf", RO},
    {"/var/cache/fontconfig", RO},
    {"/sys/devices/system/cpu", RO}, /* glibc's CPU count, OpenBLAS */
    {"/sys/devices/system/node", RO},
    {"/proc/self", RO}, /* resolves to /proc/<this pid>: see above */
    /* Machine-wide counters that psutil reads at import (ipykernel, and so
     * ipywidgets, imports it) and that os.cpu_count and numpy consult: no
     * process's secrets in them. */
    {"/proc/stat", RO},
    {"/proc/meminfo", RO},
    {"/proc/cpuinfo", RO},
    {"/proc/uptime", RO},
    {"/proc/loadavg", RO},
    {"/dev/null", DEV_RW},
    {"/dev/zero", DEV_RW},
    {"/dev/full", DEV_RW},
    {"/dev/urandom", LANDLOCK_ACCESS_FS_READ_FILE},
    {"/dev/random", LANDLOCK_ACCESS_FS_READ_FILE},
};

static long ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size,
                              uint32_t flags)
{
    return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static uint64_t handled_fs_for(int abi)
{
    uint64_t fs = FS_ABI1;
    if (abi >= 2)
        fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return fs;
}

/* Adds a rule for path; returns 0, or -errno (path missing: -ENOENT). */
static int add_rule(int ruleset, const char *path, uint64_t access, uint64_t handled)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out_close;
    }
    if (!S_ISDIR(st.st_mode))
        access &= FS_FILE_RIGHTS; /* the kernel refuses folder rights on a file */
    struct landlock_path_beneath_attr attr = {
        .allowed_access = access & handled,
        .parent_fd = fd,
    };
    if (attr.allowed_access &&
        syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
        rc = -errno;
out_close:
    close(fd);
    return rc;
}

/* Adds a rule for a path of the policy; one that cannot be added is noted and skipped
 * (the worker simply cannot reach it). Returns 1 if added, else 0. */
static size_t add_policy_path(int ruleset, const char *path, uint64_t access,
                              uint64_t handled, char *notes, size_t size)
{
    if (!path)
        return 0;
    int rc = add_rule(ruleset, path, access, handled);
    if (rc == 0)
        return 1;
    size_t len = strlen(notes);
    snprintf(notes + len, size - len, "%sskipped %s: %s", len ? "; " : "", path,
             strerror(-rc));
    return 0;
}

static void unavailable(struct sandbox_layer *l, int err)
{
    if (err == ENOSYS)
        sandbox__layer_set(l, SANDBOX_UNAVAILABLE,
                           "this kernel has no Landlock (Linux 5.13+ with "
                           "CONFIG_SECURITY_LANDLOCK)");
    else if (err == EOPNOTSUPP)
        sandbox__layer_set(
            l, SANDBOX_UNAVAILABLE,
            "Landlock is built in but not enabled (add it to the lsm= boot "
            "parameter)");
    else
        sandbox__layer_set(l, SANDBOX_UNAVAILABLE, "landlock_create_ruleset: %s",
                           strerror(err));
}

/* The ruleset's attributes for this ABI: what it handles of files, of TCP (with the
 * network off) and of scopes. The size of attr the kernel is to read. */
static size_t ruleset_attr_for(int abi, bool network, struct ll_ruleset_attr *attr)
{
    *attr = (struct ll_ruleset_attr){0};
    size_t attr_size = sizeof attr->handled_access_fs;
    attr->handled_access_fs = handled_fs_for(abi);
    if (abi >= 4) {
        attr_size = offsetof(struct ll_ruleset_attr, scoped);
        if (!network)
            attr->handled_access_net =
                LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    }
    if (abi >= 6) {
        attr_size = sizeof *attr;
        attr->scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    }
    return attr_size;
}

/* The rules: the system's paths, then the policy's read-write and read-only ones.
 * What could not be added is said in notes; *n_rw and *n_ro count the policy's. */
static void add_rules(int ruleset, const struct sandbox_policy *p, uint64_t handled,
                      char *notes, size_t size, size_t *n_rw, size_t *n_ro)
{
    for (size_t i = 0; i < sizeof system_rules / sizeof system_rules[0]; i++) {
        int rc = add_rule(ruleset, system_rules[i].path, system_rules[i].access, handled);
        if (rc < 0 && rc != -ENOENT) {
            size_t len = strlen(notes);
            snprintf(notes + len, size - len, "%sskipped %s: %s", len ? "; " : "",
                     system_rules[i].path, strerror(-rc));
        }
    }
    uint64_t rw = handled & ~RW_EXCLUDED;
    *n_rw = *n_ro = 0;
    *n_rw += add_policy_path(ruleset, p->workspace, rw, handled, notes, size);
    *n_rw += add_policy_path(ruleset, p->tmpdir, rw, handled, notes, size);
    for (const char *const *s = p->rw_paths; s && *s; s++)
        *n_rw += add_policy_path(ruleset, *s, rw, handled, notes, size);
    for (const char *const *s = p->ro_paths; s && *s; s++)
        *n_ro += add_policy_path(ruleset, *s, RO_EXEC, handled, notes, size);
}

/* The layer once the ruleset is in force. */
static void report_active(struct sandbox_layer *l, int abi, bool network, size_t n_ro,
                          size_t n_rw, const char *notes)
{
    sandbox__layer_set(l, SANDBOX_ACTIVE,
                       "ABI %d: files: system read-only (+%zu), %zu read-write path%s",
                       abi, n_ro, n_rw, n_rw == 1 ? "" : "s");
    if (abi < 4)
        sandbox__layer_note(l, "no TCP rules before ABI 4");
    else if (network)
        sandbox__layer_note(l, "TCP allowed (network on)");
    else
        sandbox__layer_note(l, "TCP bind and connect denied");
    if (abi >= 6)
        sandbox__layer_note(l, "signals and abstract sockets scoped");
    else
        sandbox__layer_note(l, "no signal scoping before ABI 6");
    if (notes[0])
        sandbox__layer_note(l, "%s", notes);
}

int sandbox__landlock_apply(const struct sandbox_policy *p, struct sandbox_layer *l,
                            int *abi_out)
{
    *abi_out = 0;
    long v = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (v < 0) {
        unavailable(l, errno);
        return 0;
    }
    int abi = (int)v;
    *abi_out = abi;

    struct ll_ruleset_attr attr;
    size_t attr_size = ruleset_attr_for(abi, p->network, &attr);
    int rc = 0;
    int ruleset = (int)ll_create_ruleset(&attr, attr_size, 0);
    if (ruleset < 0) {
        rc = -errno;
        sandbox__layer_set(l, SANDBOX_FAILED, "ABI %d: landlock_create_ruleset: %s", abi,
                           strerror(-rc));
        return rc;
    }

    char notes[SANDBOX_DETAIL_MAX] = "";
    size_t n_rw, n_ro;
    add_rules(ruleset, p, attr.handled_access_fs, notes, sizeof notes, &n_rw, &n_ro);

    /* restrict_self needs no_new_privs (or CAP_SYS_ADMIN in the current namespace, which
     * the worker has just dropped). It is also what stage 2 sets for seccomp; setting it
     * here costs nothing, since the worker never needs execve to grant privileges. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
        rc = -errno;
        sandbox__layer_set(l, SANDBOX_FAILED, "ABI %d: landlock_restrict_self: %s", abi,
                           strerror(-rc));
        close(ruleset);
        return rc;
    }
    close(ruleset);
    report_active(l, abi, p->network, n_ro, n_rw, notes);
    return 0;
}
