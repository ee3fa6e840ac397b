/* pyrt: CPython's life in the worker (Python's own program with
 * sandpit-worker.so preloaded, or sandpit-worker under the sanitizers): it is
 * initialised with the built-in module _sandpit (pymodule.h) and the embedded
 * runtime's importer (pyimport.h), then calls into the Python runtime in
 * kernel/python/sandpit/, which does the per-cell work and reaches _sandpit
 * through sandpit.link alone. Only the worker's
 * files include Python.h; no Python object crosses this header. */
#ifndef SANDPIT_PYRT_H
#define SANDPIT_PYRT_H

#include <stdbool.h>
#include <stddef.h>

/* Initialises CPython with its signal handlers (so SIGINT raises
 * KeyboardInterrupt), makes the embedded runtime importable and imports it.
 * 0, or -1 with a sentence in err. */
int pyrt_init(char *err, size_t errlen);

/* Once, in the template before it forks: its objects are left out of the
 * workers' collections (gc.freeze), so that their pages stay shared. */
/* Around a fork of the worker template (template_fork.c), with the GIL held by the
 * only thread: Python's own preparation, then its repair in each process
 * (locks made anew in the child, os.register_at_fork's hooks run). */
void pyrt_template_ready(void);
void pyrt_before_fork(void);
void pyrt_after_fork_parent(void);
void pyrt_after_fork_child(void);

/* Puts the entries of a PYTHONPATH-style list (colon-separated) at the front of
 * sys.path, where Python puts PYTHONPATH itself. The interpreter starts without
 * them, since the template that starts it is not confined and must not import
 * from folders the user's code can write; each worker adds them once it is. */
void pyrt_add_path(const char *pythonpath);

/* Puts a site-packages folder (--venv's) on sys.path, with its .pth files,
 * before the system's, as a virtual environment's Python has it. A failure is
 * logged, not fatal. */
void pyrt_add_site_dir(const char *dir);

/* Imports each module of a comma-separated list; a failure is logged (at debug level
 * when quiet: a second call will try again), not fatal. One already imported is not
 * imported again. */
void pyrt_preload(const char *modules, bool quiet);

/* The interpreter's version ("3.11.2"); static storage. */
const char *pyrt_version(void);

/* Calls sandpit.runtime.prepare_lock(): what must happen before seccomp. */
void pyrt_before_lock(void);

/* Calls sandpit.runtime.warm(): a first cell's path on a scratch namespace, so
 * that a worker forked from the template copies the pages it writes before it
 * is needed rather than in the first cell. */
void pyrt_warm(void);

/* Runs the request loop (sandpit.runtime.serve) until the link closes.
 * Returns the worker's exit status. */
int pyrt_serve(const char *hello_json);

#endif
