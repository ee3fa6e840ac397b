/* sandpit-worker.so: the worker's code as a library that the supervisor
 * preloads into Python's own program (LD_PRELOAD), whose main it replaces.
 *
 * Debian's python3 links CPython into its program. A worker that is a program
 * of its own with CPython linked in (kernel/worker_main.c) holds its own copy
 * of CPython's code, some 2.6 MB that no other process maps; run as python3,
 * it shares those pages with every other Python on the machine (Jupyter's own
 * server and clients among them), and what sandpit adds is this library.
 *
 * The program's start calls __libc_start_main with its main; the one defined
 * here is found first and calls libc's with the worker's main instead, so that
 * libc and the program start as they always do, and Python's own main never
 * runs. LD_PRELOAD goes from the environment at once: nothing the worker
 * starts inherits it. */
#include <dlfcn.h>
#include <stdlib.h>

#include "kernel/worker/worker.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

static int preloaded_main(int argc, char **argv, char **envp)
{
    (void)envp;
    return worker_main(argc, argv);
}

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

__attribute__((visibility("default"))) int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    (void)main;
    unsetenv("LD_PRELOAD");
    start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!next)
        abort();
    return next(preloaded_main, argc, argv, init, fini, rtld_fini, stack_end);
}
