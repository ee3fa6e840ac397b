/* launch: start a sandpit kernel process for a connection file, wait until
 * it answers, restart it, stop it. `sandpit start` launches it detached (its
 * own session, reparented away from the shell that started it); `sandpit
 * mcp` as a child that dies with it. Either way the struct remembers how it
 * was started, so that a kernel that exits on a restart request (as the
 * messaging spec says a kernel does) can be started again the same way. The
 * struct owns its command line and its pidfd. */
#ifndef SANDPIT_LAUNCH_H
#define SANDPIT_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel/client/client.h"

struct launched {
    pid_t pid;
    int pidfd;      /* readable when the kernel has exited; -1 when unavailable */
    bool child;     /* ours to reap (mcp), or detached (start) */
    char **argv;    /* NULL-terminated, owned: how to start it again */
    char *log_path; /* detached: where its stderr goes (owned; NULL: inherit) */
};

void launch_init(struct launched *k);
void launch_release(struct launched *k);

/* The absolute path of sandpit's binary (for argv[0]): this program's, or in the
 * gateway's own program, sandpit-serve, the sandpit beside it, whose kernels it
 * starts. 0 or -errno. */
int launch_self(char *buf, size_t len);

/* Starts argv[0] with argv: detached (new session, stdin and stdout on
 * /dev/null, stderr appended to log_path, no JPY_PARENT_PID) or as a child
 * (stdin and stdout on /dev/null, stderr inherited, killed if we die). Takes
 * over *argv (a NULL-terminated array of new strings) and sets it to NULL.
 * 0 or -errno with a sentence in err (an exec failure is reported here). */
int launch_start(struct launched *k, char ***argv, bool child, const char *log_path,
                 char *err, size_t errlen);

/* launch_start, with the "NAME=value" entries of extra_env (NULL-terminated;
 * may be NULL; borrowed) in the kernel's environment in place of ours of the
 * same names (`sandpit serve`: the KERNEL_* variables a client asked for). */
int launch_start_env(struct launched *k, char ***argv, bool child, const char *log_path,
                     char *const *extra_env, char *err, size_t errlen);

/* launch_start_env as a child, with its stdin and stdout on in_fd and out_fd
 * (borrowed: the child gets copies) in place of /dev/null: `sandpit serve`
 * runs `sandpit mcp` so, on pipes. */
int launch_start_io(struct launched *k, char ***argv, int in_fd, int out_fd,
                    const char *log_path, char *const *extra_env, char *err,
                    size_t errlen);

/* Attaches to a kernel we did not start in this process (from a state file):
 * copies argv (may be NULL) and opens a pidfd. 0 or -errno. */
int launch_attach(struct launched *k, pid_t pid, char *const *argv, const char *log_path);

/* True when the kernel has exited (reaping it when it is our child). */
bool launch_exited(struct launched *k);

/* Waits until the kernel answers on c (kernel_info, then an empty silent
 * cell, so that its worker is running) or exits. *info (may be NULL) gets the
 * new kernel_info_reply. 0, -ECHILD (it exited), -ETIMEDOUT, or -errno, with
 * a sentence in err. */
int launch_wait_ready(struct launched *k, struct client *c, double timeout_s,
                      struct msg **info, char *err, size_t errlen);

/* Restarts the kernel's interpreter: a shutdown_request with restart true and
 * metadata {"sandpit": {"in_place": true}}. A sandpit kernel (its
 * kernel_info_reply has a "sandpit" section) that replaces its worker in
 * place keeps its process; any kernel that exits instead (as the messaging
 * spec says it does; other kernels are ended if they linger) is started again
 * with the same command line and connection file. Returns 0 (same process), 1
 * (started again: k->pid changed), or -errno with a sentence in err. */
int launch_restart(struct launched *k, struct client *c, double timeout_s, char *err,
                   size_t errlen);

/* Stops the kernel: shutdown_request, then up to grace_s for it to exit,
 * then SIGTERM, then SIGKILL. 0 once it has gone, or -errno. */
int launch_stop(struct launched *k, struct client *c, double grace_s);

/* The last lines of the log (up to max bytes), for an error message. New
 * string (caller frees), "" when there is none, NULL when out of memory. */
char *launch_log_tail(const char *log_path, size_t max);

#endif
