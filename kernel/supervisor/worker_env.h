/* worker_env: the environment a worker's process gets (worker_env.c): what of
 * the kernel's environment it may see, the preloaded library, its cgroup's note. */
#ifndef SANDPIT_WORKER_ENV_H
#define SANDPIT_WORKER_ENV_H

#include <stdbool.h>

/* The environment a worker gets (a new NULL-terminated array of new strings;
 * free with worker_env_free): with the sandbox on, only variables known
 * to be harmless and those named in pass_env (comma-separated); a Jupyter
 * server's environment can hold tokens and credentials. */
char **worker_env_new(bool sandbox, const char *pass_env);
void worker_env_free(char **envp);

/* env as worker_env_new made it, with, where the worker is a library (program),
 * LD_PRELOAD naming it alone. NULL when out of memory; env is taken over either
 * way. */
char **worker_env_preload(const char *program, char **env);

/* envp with SANDPIT_CGROUP=note appended (a new array of borrowed strings but
 * the last, which is new: free both with worker_env_free_with). NULL when out of
 * memory. */
char **worker_env_with_cgroup(char *const envp[], const char *note);
void worker_env_free_with(char **e);

#endif
