/* The seccomp filter: the last layer, and the one that stops new processes.
 *
 * Two filters, both loaded with SECCOMP_FILTER_FLAG_TSYNC so that every thread that
 * exists by stage 2 (CPython's, OpenBLAS's) gets them, and every later thread inherits
 * them. The kernel runs both on each call and keeps the stricter answer.
 *
 * 1. A guard, hand-written in BPF, for what libseccomp cannot say:
 *    - the architecture: anything but the native 64-bit ABI (int $0x80 or sysenter into
 *      the i386 table on x86_64, aarch32 on arm64) kills the process. No 64-bit CPython
 *      makes such a call; it is the classic way around a filter written for the native
 *      numbers, and killing the whole process leaves no half-dead interpreter behind
 *      (the supervisor reports the death and starts a new worker);
 *    - x32 on x86_64, which shares the native architecture token and is told apart by
 *      __X32_SYSCALL_BIT in the number: killed the same way;
 *    - numbers above the last syscall reviewed for this table (450, Linux 6.1): ENOSYS,
 *      as on an older kernel, which is what libraries already handle. A default-allow
 *      filter would otherwise allow every syscall added after it was written;
 *    - prctl, by allowlist on its first argument (libseccomp cannot express "not one
 * of").
 * 2. The libseccomp filter: default allow, and explicit denials with EPERM (so Python
 *    raises PermissionError instead of dying), each justified in sandbox/POLICY.md.
 *
 * Threads stay allowed: clone is denied unless CLONE_THREAD is set (and whenever a
 * namespace flag is), and clone3, whose flags sit in memory a filter cannot read, fails
 * with ENOSYS so that glibc falls back to clone.
 */
#include "sandbox/internal.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH     AUDIT_ARCH_X86_64
#define X32_SYSCALL_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif
/* The highest syscall number reviewed for this file: set_mempolicy_home_node, Linux 6.1,
 * the same number on x86_64 and arm64 (their tables are shared from 424 on). */
#define LAST_REVIEWED_SYSCALL 450u

#define ARG0_LO (offsetof(struct seccomp_data, args[0]))
#define ARG0_HI (offsetof(struct seccomp_data, args[0]) + 4) /* little-endian */

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#define IOPRIO_WHO_PROCESS 1

/* Options prctl may take; everything else is EPERM.
 * Not PR_SET_PDEATHSIG: the supervisor sets it so the worker dies with it; user code
 * must not clear it. Not PR_SET_DUMPABLE, PR_SET_PTRACER, PR_SET_MM, PR_SET_SECCOMP,
 * PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_CHILD_SUBREAPER: none is needed by the
 * interpreter or its libraries, and each changes who may inspect or outlive whom. */
static const uint32_t prctl_allowed[] = {
    PR_SET_NAME,     /* glibc pthread_setname_np, OpenBLAS, Python 3.14's threading */
    PR_GET_NAME,     /* pthread_getname_np */
    PR_GET_DUMPABLE, /* read-only */
    PR_SET_VMA,      /* glibc 2.39+ names its anonymous mappings; harmless */
    PR_GET_SECCOMP,  /* read-only */
    PR_CAPBSET_READ, /* read-only */
    PR_GET_NO_NEW_PRIVS,
    PR_SET_NO_NEW_PRIVS, /* can only restrict */
    PR_GET_PDEATHSIG,
    PR_GET_TIMERSLACK,
#if defined(__aarch64__)
    PR_SVE_GET_VL, /* numpy and glibc query the vector length */
    PR_GET_TAGGED_ADDR_CTRL,
#endif
};

/* Denied with EPERM whatever their arguments; names unknown to libseccomp or absent on
 * this architecture are skipped. Reasons: sandbox/POLICY.md. */
static const char *const denied[] = {
    /* new programs and processes */
    "execve",
    "execveat",
    "fork",
    "vfork",
    /* other processes' memory */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "process_madvise",
    "process_mrelease",
    /* sockets: add_socket_rules */
    /* filesystem topology and namespaces */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    /* kernel attack surface with no use in a cell */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "memfd_create",
    "memfd_secret",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "lookup_dcookie",
    "uselib",
    "modify_ldt",
    "vm86",
    "vm86old",
    /* the machine itself */
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "nfsservctl",
    "reboot",
    "swapon",
    "swapoff",
    "quotactl",
    "quotactl_fd",
    "acct",
    "syslog",
    "vhangup",
    "ioperm",
    "iopl",
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "adjtimex",
    "stime",
    "sethostname",
    "setdomainname",
    /* identity and the process group */
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "setsid",
    "setpgid",
    /* the sandbox itself */
    "seccomp",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "landlock_restrict_self",
};

struct filter_stats {
    unsigned rules;
    unsigned skipped;
};

/* Adds a rule with up to one argument comparison; a syscall this architecture lacks is
 * skipped. Returns 0 or -errno. */
static int rule(scmp_filter_ctx ctx, struct filter_stats *st, uint32_t action,
                const char *name, unsigned n_args, struct scmp_arg_cmp cmp)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr < 0) { /* __NR_SCMP_ERROR, or a pseudo-number: not on this architecture */
        st->skipped++;
        return 0;
    }
    int rc = n_args ? seccomp_rule_add(ctx, action, nr, 1, cmp)
                    : seccomp_rule_add(ctx, action, nr, 0);
    if (rc == 0)
        st->rules++;
    return rc;
}

/* libseccomp's SCMP_A0..SCMP_A5 make a struct scmp_arg_cmp from a compound literal
 * that leaves datum_b out when a comparison needs one datum. Clang warns of that
 * (-Wmissing-field-initializers) in our code, where the macros are expanded; GCC does
 * not, as the macros come from a system header. The member is zero, as it must be:
 * the warning is off for the rules below alone. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define DENY(name)                                                                       \
    rule(ctx, st, SCMP_ACT_ERRNO(EPERM), (name), 0, SCMP_A0(SCMP_CMP_EQ, 0))
#define DENY_IF(name, cmp) rule(ctx, st, SCMP_ACT_ERRNO(EPERM), (name), 1, (cmp))
#define TRY(x)                                                                           \
    do {                                                                                 \
        if ((rc = (x)) < 0)                                                              \
            return rc;                                                                   \
    } while (0)

/* Sockets. With the network off: no socket(), and no call that takes an address
 * (connect, bind, sendto with one, sendmsg and sendmmsg, whose address sits in memory
 * the filter cannot read). With it on: TCP and UDP over IPv4 and IPv6 only (no AF_UNIX,
 * netlink, packet or raw sockets, nor SCTP, UDP-Lite or MPTCP). Either way, socketpair
 * makes only a connected AF_UNIX stream pair: a datagram or seqpacket pair (SOCK_RAW is
 * a datagram pair to AF_UNIX) can be sent to, connected to or bound on any path, and
 * paths are not behind the network namespace. On a connected stream, an address is
 * refused (EISCONN) and connect(AF_UNSPEC) does not disconnect. One comparison per
 * rule, so "not 2 and not 10" is spelt as the ranges around them; the type is compared
 * without its flags (the kernel refuses flags other than SOCK_CLOEXEC|SOCK_NONBLOCK).
 * 0 or -errno. */
static int add_socket_rules(scmp_filter_ctx ctx, const struct sandbox_policy *p,
                            struct filter_stats *st)
{
    int rc = 0;
    if (!p->network) {
        static const char *const addressed[] = {"socket", "connect", "bind", "sendmsg",
                                                "sendmmsg"};
        for (size_t i = 0; i < sizeof addressed / sizeof addressed[0]; i++)
            TRY(DENY(addressed[i]));
        TRY(DENY_IF("sendto", SCMP_A4(SCMP_CMP_NE, 0))); /* send() passes NULL */
    } else {
        TRY(DENY_IF("socket", SCMP_A0(SCMP_CMP_LT, AF_INET)));
        for (unsigned af = AF_INET + 1; af < AF_INET6; af++)
            TRY(DENY_IF("socket", SCMP_A0(SCMP_CMP_EQ, af)));
        TRY(DENY_IF("socket", SCMP_A0(SCMP_CMP_GT, AF_INET6)));
        for (unsigned type = 0; type < 16; type++)
            if (type != SOCK_STREAM && type != SOCK_DGRAM)
                TRY(DENY_IF("socket", SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)));
        /* The protocol: 0 (the type's own), IPPROTO_TCP or IPPROTO_UDP. */
        TRY(DENY_IF("socket", SCMP_A2(SCMP_CMP_GT, IPPROTO_UDP)));
        for (unsigned proto = 1; proto < IPPROTO_UDP; proto++)
            if (proto != IPPROTO_TCP)
                TRY(DENY_IF("socket", SCMP_A2(SCMP_CMP_EQ, proto)));
    }
    TRY(DENY_IF("socketpair", SCMP_A0(SCMP_CMP_NE, AF_UNIX)));
    for (unsigned type = 0; type < 16; type++)
        if (type != SOCK_STREAM)
            TRY(DENY_IF("socketpair", SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)));
    return 0;
}

static int add_rules(scmp_filter_ctx ctx, const struct sandbox_policy *p,
                     struct filter_stats *st, bool no_shared_anon)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
        TRY(DENY(denied[i]));

    /* Threads yes, processes no: clone without CLONE_THREAD, or with a namespace. */
    TRY(DENY_IF("clone", SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)));
    static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                             CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                             CLONE_NEWNET};
    for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
        TRY(DENY_IF("clone", SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])));
    TRY(rule(ctx, st, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, SCMP_A0(SCMP_CMP_EQ, 0)));

    TRY(add_socket_rules(ctx, p, st));

    /* Signals only to the worker itself (no pid namespace: getpid() is its real pid).
     * kill(0) and kill(-1) would reach the supervisor's process group or everything. */
    const scmp_datum_t self = (scmp_datum_t)getpid();
    static const char *const signalling[] = {"kill", "tkill", "tgkill", "rt_sigqueueinfo",
                                             "rt_tgsigqueueinfo"};
    for (size_t i = 0; i < sizeof signalling / sizeof signalling[0]; i++)
        TRY(DENY_IF(signalling[i], SCMP_A0(SCMP_CMP_NE, self)));

    /* Only the query form of personality (it could turn off ASLR for a child). */
    TRY(DENY_IF("personality", SCMP_A0(SCMP_CMP_NE, 0xffffffffu)));

    /* Typing into the terminal of whoever started the kernel. The request is an
     * unsigned int to the kernel, so only the low 32 bits are compared. */
    TRY(DENY_IF("ioctl", SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)));
    TRY(DENY_IF("ioctl", SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX)));

    /* Calls that take a pid and would reach the supervisor, which runs as the same user:
     * allowed on the caller only (pid 0). */
    TRY(DENY_IF("prlimit64", SCMP_A0(SCMP_CMP_NE, 0)));
    TRY(DENY_IF("setpriority", SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS)));
    TRY(DENY_IF("setpriority", SCMP_A1(SCMP_CMP_NE, 0)));
    TRY(DENY_IF("ioprio_set", SCMP_A0(SCMP_CMP_NE, IOPRIO_WHO_PROCESS)));
    TRY(DENY_IF("ioprio_set", SCMP_A1(SCMP_CMP_NE, 0)));
    static const char *const by_pid[] = {"sched_setscheduler", "sched_setparam",
                                         "sched_setattr", "migrate_pages", "move_pages"};
    for (size_t i = 0; i < sizeof by_pid / sizeof by_pid[0]; i++)
        TRY(DENY_IF(by_pid[i], SCMP_A0(SCMP_CMP_NE, 0)));

    /* Where no cgroup counts them, shared anonymous mappings escape RLIMIT_DATA (and
     * SysV segments outlive the worker): refused, since nothing a cell runs without
     * multiprocessing, itself refused, makes one (mmap.mmap(-1, n) is the user's own
     * call). MAP_SHARED_VALIDATE has the MAP_SHARED bit too. Private mappings stay. */
    if (no_shared_anon) {
        TRY(DENY_IF("mmap", SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS,
                                    MAP_SHARED | MAP_ANONYMOUS)));
        TRY(DENY("shmget"));
    }
    return 0;
}
#undef TRY
#pragma GCC diagnostic pop

#define PRCTL_ALLOWED (sizeof prctl_allowed / sizeof prctl_allowed[0])
_Static_assert(PRCTL_ALLOWED <= 20, "the guard's program and jumps are sized for 20");

/* The guard filter (see the top of the file). */
static int load_guard(void)
{
    struct sock_filter prog[32];
    size_t n = 0;
    const size_t n_prctl = PRCTL_ALLOWED;

    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, arch));
    prog[n++] =
        (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
#ifdef X32_SYSCALL_BIT
    /* -1 is what a tracer writes to skip a call: leave it to the range check (ENOSYS). */
    prog[n++] =
        (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 2);
    prog[n++] =
        (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K,
                                             LAST_REVIEWED_SYSCALL, 0, 1);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    /* prctl: the high half of the option must be 0, the low half one of the list. */
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0,
                                             (uint8_t)(3 + n_prctl + 1));
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_HI);
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0,
                                             (uint8_t)(1 + n_prctl));
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO);
    for (size_t i = 0; i < n_prctl; i++)
        prog[n++] = (struct sock_filter)BPF_JUMP(
            BPF_JMP | BPF_JEQ | BPF_K, prctl_allowed[i], (uint8_t)(n_prctl - i), 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

    struct sock_fprog fprog = {(unsigned short)n, prog};
    long rc =
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (rc < 0)
        return -errno;
    if (rc > 0) /* the id of a thread that could not be synchronised */
        return -EBUSY;
    return 0;
}

int sandbox__seccomp_apply(const struct sandbox_policy *p, struct sandbox_layer *l,
                           bool no_shared_anon)
{
#ifndef NATIVE_ARCH
    (void)p;
    (void)no_shared_anon;
    sandbox__layer_set(l, SANDBOX_UNAVAILABLE, "no filter written for this architecture");
    return 0;
#else
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        int rc = -errno;
        sandbox__layer_set(l, SANDBOX_FAILED, "no_new_privs: %s", strerror(-rc));
        return rc;
    }
    struct filter_stats st = {0, 0};
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        sandbox__layer_set(l, SANDBOX_FAILED, "seccomp_init failed");
        return -ENOMEM;
    }
    int rc;
    uint32_t kill = seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_KILL;
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, kill)) < 0 ||
        (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0) {
        sandbox__layer_set(l, SANDBOX_FAILED, "seccomp_attr_set: %s", strerror(-rc));
        goto out_release;
    }
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); /* a binary tree if supported */
    if ((rc = add_rules(ctx, p, &st, no_shared_anon)) < 0) {
        sandbox__layer_set(l, SANDBOX_FAILED, "seccomp_rule_add: %s", strerror(-rc));
        goto out_release;
    }

    if ((rc = load_guard()) < 0) {
        if (rc == -ENOSYS || rc == -EINVAL)
            sandbox__layer_set(l, SANDBOX_UNAVAILABLE, "seccomp(TSYNC): %s",
                               strerror(-rc));
        else
            sandbox__layer_set(l, SANDBOX_FAILED, "guard filter: %s", strerror(-rc));
        if (l->state == SANDBOX_UNAVAILABLE)
            rc = 0;
        goto out_release;
    }
    if ((rc = seccomp_load(ctx)) < 0) {
        sandbox__layer_set(l, SANDBOX_FAILED,
                           "seccomp_load: %s (the guard filter is in "
                           "force)",
                           strerror(-rc));
        goto out_release;
    }
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) {
        sandbox__layer_set(l, SANDBOX_FAILED,
                           "loaded, but PR_GET_SECCOMP does not say so");
        rc = -EIO;
        goto out_release;
    }
    sandbox__layer_set(
        l, SANDBOX_ACTIVE,
        "%u rules (EPERM), clone3 and syscalls above %u ENOSYS, other ABIs "
        "killed; sockets: %s",
        st.rules, LAST_REVIEWED_SYSCALL,
        p->network ? "TCP and UDP over IPv4/IPv6; local stream pairs"
                   : "none (local stream pairs, no addresses)");
    if (no_shared_anon)
        sandbox__layer_note(l, "shared anonymous memory refused (no cgroup counts it)");
    rc = 0;
out_release:
    seccomp_release(ctx);
    return rc;
#endif
}
