/* worker_env: the environment a worker's process gets (worker_env.c), built by
 * worker_env_new: what of the kernel's environment it may see and the preloaded
 * library; each process started adds its cgroup's note. */
#ifndef SANDPIT_WORKER_ENV_H
#define SANDPIT_WORKER_ENV_H

#include <stdbool.h>

/* The environment a worker gets (a new NULL-terminated array of new strings;
 * free with worker_env_free): with the sandbox on, only variables known
 * to be harmless and those named in pass_env (comma-separated), since a Jupyter
 * server's environment can hold tokens and credentials; and, where the worker
 * is a library (program, its path), LD_PRELOAD naming it alone. NULL when out
 * of memory. */
char **worker_env_new(bool sandbox, const char *pass_env, const char *program);
void worker_env_free(char **envp);

/* envp with SANDPIT_CGROUP=note appended (a new array of borrowed strings but
 * the last, which is new: free both with worker_env_free_with). NULL when out of
 * memory. */
char **worker_env_with_cgroup(char *const envp[], const char *note);
void worker_env_free_with(char **e);

#endif
