/* instance: where the files of a workspace's background kernel live.
 * `sandpit start` writes them and `run`, `stop` and `status` find them from
 * the workspace alone: in the user's Jupyter runtime folder, a connection
 * file sandpit-<hash>.json (<hash> from the workspace's real path), a state
 * file sandpit-<hash>.state.json (the kernel's pid and command line) and its
 * log sandpit-<hash>.log (and an empty sandpit-<hash>.lock). Paths are kept in the
 * struct; the state's command line is owned by struct instance_state. */
#ifndef SANDPIT_INSTANCE_H
#define SANDPIT_INSTANCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct instance {
    char workspace[PATH_MAX]; /* real path */
    char dir[PATH_MAX];       /* the Jupyter runtime folder */
    char connection_file[PATH_MAX];
    char state_file[PATH_MAX];
    char log_file[PATH_MAX];
    char lock_file[PATH_MAX];
};

struct instance_state {
    pid_t pid;
    unsigned long long start_time; /* /proc/PID/stat field 22: tells pids apart */
    char **argv;                   /* NULL-terminated, owned */
};

/* The Jupyter runtime folder, as jupyter_core finds it: JUPYTER_RUNTIME_DIR;
 * else, when JUPYTER_PLATFORM_DIRS is set, XDG_RUNTIME_DIR/jupyter; else the
 * data folder's runtime/ (JUPYTER_DATA_DIR, XDG_DATA_HOME/jupyter or
 * ~/.local/share/jupyter). 0 or -ENOENT (no HOME), -ENAMETOOLONG. */
int instance_runtime_dir(char *out, size_t len);

/* Fills in the paths for a workspace (NULL: the current folder), which must
 * exist. 0 or -errno with a sentence in err. */
int instance_locate(struct instance *in, const char *workspace, char *err, size_t errlen);

/* instance_locate, then the kernel that runs for it: 0 when one runs for
 * that folder (st is its state); when workspace is NULL (the current folder)
 * and none does, the kernel of the nearest enclosing folder that has one:
 * 1, with in and st that folder's; 2 when no kernel runs (in is the
 * folder's own); or -errno with a sentence in err. Release st after. */
int instance_find_running(struct instance *in, const char *workspace,
                          struct instance_state *st, char *err, size_t errlen);

/* Makes the runtime folder (mode 0700) if it is missing. 0 or -errno. */
int instance_make_dir(const struct instance *in);

/* Takes an exclusive lock for the workspace's files (waits for another
 * start, stop or restart to finish). Returns the descriptor to close to let
 * go, or -errno. */
int instance_lock(const struct instance *in);

/* Removes the lock file: for stop, while it holds the lock (instance_lock
 * takes a lock again when its file was removed meanwhile). */
void instance_remove_lock(const struct instance *in);

/* instance_remove with the log, then instance_remove_lock: what stop does. */
void instance_remove_all(const struct instance *in);

/* Writes the state file (mode 0600) for a kernel of pid started with argv. */
int instance_write_state(const struct instance *in, pid_t pid, char *const *argv);

/* Reads the state file. 0, -ENOENT when there is none, -EINVAL when it is not
 * one of ours. st is initialised by the call; release it after. */
int instance_read_state(const struct instance *in, struct instance_state *st);
void instance_state_release(struct instance_state *st);

/* True when pid is alive and is the process that was started at start_time. */
bool instance_alive(pid_t pid, unsigned long long start_time);

/* The start time of pid as /proc/PID/stat gives it, or 0 when it is gone. */
unsigned long long instance_start_time(pid_t pid);

/* Removes the connection and state files, and the log when with_log. The
 * lock file stays: removing it while another command waits on it would let a
 * third take a lock of its own on a new file. */
void instance_remove(const struct instance *in, bool with_log);

#endif
