/* Capabilities: the worker ends stage 1 holding none.
 *
 * After unshare(CLONE_NEWUSER) the worker holds every capability inside its own user
 * namespace: it could mount in its mount namespace (and undo the read-only mounts), bring
 * up the loopback of its network namespace, and, as the owner of the mapped uid, override
 * file permissions on that uid's files. Real root without a user namespace holds them
 * over the whole machine. Nothing after the namespaces needs any, so all five sets go:
 * bounding (so no execve can grant one back; no_new_privs, set before Landlock, also
 * keeps a root execve from refilling the permitted set), ambient, inheritable, permitted
 * and effective. The seccomp filter also denies the calls these capabilities would
 * unlock (mount, unshare, setns, the set*id family), so either layer alone holds.
 */
#include "sandbox/internal.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int caps_get(struct __user_cap_data_struct data[2])
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    return syscall(SYS_capget, &hdr, data) < 0 ? -errno : 0;
}

int sandbox__caps_drop(struct sandbox_layer *l)
{
    /* The bounding set needs CAP_SETPCAP; without it (an unprivileged worker without a
     * user namespace) the set stays full but cannot be used: nothing is permitted, and
     * no_new_privs stops execve from granting anything. */
    int bounding_err = 0;
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && bounding_err == 0)
            bounding_err = errno;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        int rc = -errno;
        sandbox__layer_set(l, SANDBOX_FAILED, "cannot clear the ambient set: %s",
                           strerror(-rc));
        return rc;
    }
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &hdr, none) < 0) {
        int rc = -errno;
        sandbox__layer_set(l, SANDBOX_FAILED, "capset: %s", strerror(-rc));
        return rc;
    }

    struct __user_cap_data_struct now[2];
    int rc = caps_get(now);
    if (rc < 0 || now[0].effective || now[1].effective || now[0].permitted ||
        now[1].permitted || now[0].inheritable || now[1].inheritable) {
        sandbox__layer_set(l, SANDBOX_FAILED, "capabilities remain after capset");
        return rc < 0 ? rc : -EPERM;
    }
    if (bounding_err == EPERM)
        sandbox__layer_set(l, SANDBOX_ACTIVE,
                           "none held; bounding set kept (no CAP_SETPCAP to drop it)");
    else if (bounding_err)
        sandbox__layer_set(l, SANDBOX_ACTIVE, "none held; bounding set: %s",
                           strerror(bounding_err));
    else
        sandbox__layer_set(l, SANDBOX_ACTIVE,
                           "none held, bounding and ambient sets empty");
    return 0;
}
