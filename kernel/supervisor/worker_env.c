/* worker_env: the environment a worker's process gets, built by one function.
 *
 * worker_env_new builds it, once per kernel (worker_lifecycle.c), in two steps: what of
 * the kernel's own environment a worker may see (with the sandbox on, only
 * variables known to be harmless and those the user names: a Jupyter server's
 * environment can hold tokens and credentials), then, where the worker is a
 * library, LD_PRELOAD naming it alone. Each worker exec'd from it differs only
 * by the note of its own cgroup, appended as it starts (worker_env_with_cgroup,
 * worker_process.c). What the worker then sets for its Python itself (SANDPIT_*, TMPDIR,
 * ...) it sets from its command line (kernel/worker/worker.c). */
#include "kernel/supervisor/worker_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names, and prefixes ending in '*', of variables a sandboxed cell may see. */
static const char *const env_allowed[] = {
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONWARNINGS",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "LC_*",
    "JPY_PARENT_PID",
    "JPY_SESSION_NAME",
    /* Where the user's setup lives, for the sandbox to keep it out of reach. */
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_PATH",
    "IPYTHONDIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "SANDPIT_*",
    NULL,
};

static bool env_kept(const char *entry, const char *extra)
{
    size_t n = strcspn(entry, "=");
    for (const char *const *a = env_allowed; *a; a++) {
        size_t len = strlen(*a);
        if ((*a)[len - 1] == '*' ? strncmp(entry, *a, len - 1) == 0
                                 : len == n && strncmp(entry, *a, n) == 0)
            return true;
    }
    for (const char *p = extra; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(entry, p, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static char **with_preload(const char *program, char **env);

char **worker_env_new(bool sandbox, const char *pass_env, const char *program)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (sandbox && !env_kept(environ[i], pass_env))
            continue;
        if (!(envp[k] = strdup(environ[i]))) {
            worker_env_free(envp);
            return NULL;
        }
        k++;
    }
    return with_preload(program, envp);
}

void worker_env_free(char **envp)
{
    for (size_t i = 0; envp && envp[i]; i++)
        free(envp[i]);
    free(envp);
}

/* envp with SANDPIT_CGROUP=note appended (a new array of borrowed strings but
 * the last, which is new: free both with worker_env_free_with). */
char **worker_env_with_cgroup(char *const envp[], const char *note)
{
    size_t n = 0;
    while (envp[n])
        n++;
    char **e = calloc(n + 2, sizeof *e);
    char *var = malloc(strlen("SANDPIT_CGROUP=") + strlen(note) + 1);
    if (!e || !var) {
        free(e);
        free(var);
        return NULL;
    }
    memcpy(e, envp, n * sizeof *e);
    strcpy(var, "SANDPIT_CGROUP=");
    strcat(var, note);
    e[n] = var;
    return e;
}

void worker_env_free_with(char **e)
{
    size_t n = 0;
    while (e && e[n])
        n++;
    if (n)
        free(e[n - 1]);
    free(e);
}

/* What LD_PRELOAD names before the worker's library (ending in a space): the
 * AddressSanitizer runtime in a build with it, which must be the first library
 * loaded (Makefile). */
#ifndef SANDPIT_WORKER_PRELOAD_FIRST
#define SANDPIT_WORKER_PRELOAD_FIRST ""
#endif

/* env with, where the worker is a library, LD_PRELOAD naming it alone (one the
 * kernel was given does not reach the worker). The worker takes it out of its
 * own environment as it starts. NULL when out of memory; env is taken over
 * either way. */
static char **with_preload(const char *program, char **env)
{
#ifdef SANDPIT_WORKER_PYTHON
    if (!env)
        return NULL;
    size_t n = 0, k = 0;
    while (env[n])
        n++;
    char **out = calloc(n + 2, sizeof *out);
    char *preload = NULL;
    if (!out || asprintf(&preload, "LD_PRELOAD=" SANDPIT_WORKER_PRELOAD_FIRST "%s",
                         program) < 0) {
        free(out);
        worker_env_free(env);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (strncmp(env[i], "LD_PRELOAD=", 11) == 0)
            free(env[i]);
        else
            out[k++] = env[i];
    }
    out[k] = preload;
    free(env);
    return out;
#else
    (void)program;
    return env;
#endif
}
