/* userdir: what a kernel started by Enterprise Gateway takes from the
 * gateway's user. The gateway exports the client's KERNEL_* variables to the
 * kernel's environment (over SSH with DistributedProcessProxy, in the pod with
 * KubernetesProcessProxy); KERNEL_USERNAME is the user the gateway
 * authenticated, or the one the client named. A --workspace with a
 * {username} component becomes that user's folder, made for the kernel's own
 * user alone (0700) beneath the folder before it, never through a link
 * (sandbox/tfile.h), so that users who share one remote account share
 * neither files nor history (the history is the workspace's). The name must
 * be one a folder can have: a hostile "../x" or "a/b" is refused. */
#ifndef SANDPIT_USERDIR_H
#define SANDPIT_USERDIR_H

#include <stdbool.h>
#include <stddef.h>

#define USERDIR_PLACEHOLDER "{username}"
#define USERDIR_MAX         64

/* Whether name may be a folder's name: 1 to USERDIR_MAX of letters,
 * digits, '.', '_' and '-', not starting with '.'. */
bool userdir_valid(const char *name);

/* For ws, a --workspace holding USERDIR_PLACEHOLDER as one whole
 * component, once: the path with username in its place, in *out (new), the
 * folders from the placeholder on made with mode 0700 beneath the part before
 * it (which must exist), and the last one checked to be a folder of this
 * process's user. *out is NULL when ws holds no placeholder. 0, or -errno
 * with a sentence in err (username NULL: the gateway gave none). */
int userdir_workspace(const char *ws, const char *username, char **out, char *err,
                      size_t errlen);

/* The log's context for a kernel the gateway started: "kernel_id=ID" and, when
 * KERNEL_USERNAME is a valid name, " user=NAME", into buf (len bytes). */
void userdir_log_context(const char *kernel_id, const char *username, char *buf,
                         size_t len);

struct options;

/* For a kernel the gateway started: every log line names its kernel id and
 * the user (KERNEL_USERNAME, when valid) from here on, with the date. */
void userdir_log_start(const char *kernel_id);

/* For any kernel: a --workspace naming {username} becomes KERNEL_USERNAME's
 * folder (userdir_workspace). 0, or -errno with a sentence in err. */
int userdir_apply(struct options *o, char *err, size_t errlen);

#endif
