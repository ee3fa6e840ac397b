/* pyrt: CPython's life in the worker: initialised, told of forks, handed
 * the paths and preloads, and left to serve.
 *
 * What is hard here:
 * - Signals. The interpreter is initialised with install_signal_handlers, so
 *   that SIGINT becomes KeyboardInterrupt in the cell (a C handler installed
 *   first would keep Python from installing its own and SIGINT would kill the
 *   worker), and SIGPIPE/SIGXFSZ are ignored so a write past a limit is an
 *   OSError rather than a dead process.
 * - Finding the interpreter. The worker is normally Python's own program
 *   (Debian's /usr/bin/python3.11) with sandpit-worker.so preloaded, whose
 *   main replaces Python's (kernel/worker_preload.c); under the sanitizers it
 *   is sandpit-worker, a program of its own with CPython linked in
 *   (kernel/worker_main.c). Either way the program name is set to the python3
 *   sandpit was built with (SANDPIT_PYTHON): sys.prefix is then /usr and the
 *   interpreter sees the same dist-packages as the system's python3.
 * - The order. The runtime's module (pymodule.c) is registered and the raw
 *   allocator wrapped (pyalloc.c) around Python's start; the embedded
 *   runtime's importer (pyimport.c) is installed before the first import. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernel/worker/pyrt.h"

#include <string.h>

#include "kernel/link/worker_exit.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/worker/arenas.h"
#include "kernel/worker/pyalloc.h"
#include "kernel/worker/pyimport.h"
#include "kernel/worker/pymodule.h"

static char py_version[32];

const char *pyrt_version(void)
{
    return py_version;
}

static void fmt_exception(char *err, size_t errlen, const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(err, errlen, "%s: %s: %s", what,
             type ? ((PyTypeObject *)type)->tp_name : "?", text ? text : "?");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

int pyrt_init(char *err, size_t errlen)
{
    double start = monotime_now();
    /* Arenas populated while the worker starts (arenas.h). */
    PyObjectArenaAllocator arenas = {NULL, arenas_map, arenas_unmap};
    PyObject_SetArenaAllocator(&arenas);
    if (PyImport_AppendInittab("_sandpit", pymodule_create) < 0) {
        snprintf(err, errlen, "cannot register _sandpit");
        return -1;
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 1;
    config.parse_argv = 0;
    config.safe_path = 1;
    config.user_site_directory = 0;
    config.write_bytecode = 0;
    config.buffered_stdio = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, SANDPIT_PYTHON);
    if (!PyStatus_Exception(st)) {
        char *argv0[] = {""};
        st = PyConfig_SetBytesArgv(&config, 1, argv0);
    }
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "%s",
                 st.err_msg ? st.err_msg : "Py_InitializeFromConfig failed");
        return -1;
    }
    pyalloc_wrap();
    double initialised = monotime_now();
    const char *v = Py_GetVersion();
    size_t n = strcspn(v, " ");
    snprintf(py_version, sizeof py_version, "%.*s", (int)n, v);

    if (pyimport_install() < 0) {
        fmt_exception(err, errlen, "cannot install the runtime importer");
        return -1;
    }
    PyObject *rt = PyImport_ImportModule("sandpit.runtime");
    if (!rt) {
        fmt_exception(err, errlen, "cannot import sandpit.runtime");
        return -1;
    }
    Py_DECREF(rt);
    log_debug("start-up: Python initialised in %.1f ms, the runtime imported in %.1f ms",
              (initialised - start) * 1e3, (monotime_now() - initialised) * 1e3);
    return 0;
}

void pyrt_preload(const char *modules, bool quiet)
{
    char *copy = strdup(modules), *save = NULL;
    for (char *name = copy ? strtok_r(copy, ",", &save) : NULL; name;
         name = strtok_r(NULL, ",", &save)) {
        while (*name == ' ')
            name++;
        if (!*name)
            continue;
        PyObject *m = PyImport_ImportModule(name);
        if (!m) {
            char err[512];
            fmt_exception(err, sizeof err, name);
            if (quiet)
                log_debug("not preloaded before the sandbox locks: %s", err);
            else
                log_warn("cannot preload %s", err);
        }
        Py_XDECREF(m);
    }
    free(copy);
}

static int call_runtime(const char *fn, const char *arg)
{
    PyObject *rt = PyImport_ImportModule("sandpit.runtime");
    PyObject *r = rt ? PyObject_CallMethod(rt, fn, arg ? "s" : NULL, arg) : NULL;
    int rc = 0;
    if (!r) {
        char err[512];
        fmt_exception(err, sizeof err, fn);
        log_error("%s", err);
        rc = -1;
    } else if (PyLong_Check(r)) {
        rc = (int)PyLong_AsLong(r);
    }
    Py_XDECREF(r);
    Py_XDECREF(rt);
    return rc;
}

void pyrt_template_ready(void)
{
    /* What the template holds stays shared with its workers only if nothing
     * writes to it: a collection in a worker would touch every object's
     * header, and copy every page of the heap. Frozen, they are not
     * collected (they are the runtime, alive for the worker's life anyway). */
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *r = gc ? PyObject_CallMethod(gc, "collect", NULL) : NULL;
    Py_XDECREF(r);
    /* The workers it forks start from here: its arenas' unwritten pages go
     * back now, and their own arenas come as usual (arenas.h). */
    size_t back = arenas_settle();
    log_debug("the template gave back %zu kB of Python's arenas left unwritten",
              back >> 10);
    r = gc ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
    if (!r)
        PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(gc);
}

void pyrt_before_fork(void)
{
    PyOS_BeforeFork();
}

void pyrt_after_fork_parent(void)
{
    PyOS_AfterFork_Parent();
}

void pyrt_after_fork_child(void)
{
    PyOS_AfterFork_Child();
}

void pyrt_add_path(const char *pythonpath)
{
    call_runtime("add_path", pythonpath);
}

void pyrt_add_site_dir(const char *dir)
{
    call_runtime("add_site_dir", dir);
}

void pyrt_before_lock(void)
{
    call_runtime("prepare_lock", NULL);
}

void pyrt_warm(void)
{
    call_runtime("warm", NULL);
}

int pyrt_serve(const char *hello_json)
{
    int rc = call_runtime("serve", hello_json);
    /* The link is closed: the supervisor has gone or is replacing us. Skip
     * Python's finalisation, which may run user code (atexit, __del__). */
    fflush(NULL);
    return rc < 0 ? WORKER_EXIT_FAILED : rc;
}
