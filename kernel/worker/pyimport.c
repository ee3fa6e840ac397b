/* pyimport: the importer of the embedded runtime.
 *
 * What is hard here:
 * - Start-up time. The importer is a few lines of Python (bootstrap, below)
 *   on the module's two methods, not importlib.abc, whose import alone is a
 *   third of the worker's start.
 * - Memory. The runtime's sources and bytecode are never copied: Python sees
 *   them as read-only views of the binary's pages, which go back to the page
 *   cache once an import from them has ended (drop_embedded_pages). */
#include "kernel/worker/pyimport.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/embedded.h"

#define PY_PREFIX "kernel/python/"

bool pyimport_bytecode_fits(const unsigned char *data, size_t len)
{
    long magic = PyImport_GetMagicNumber(); /* little-endian, as in a .pyc */
    if (len < 4 || magic == -1) {
        PyErr_Clear();
        return false;
    }
    for (int i = 0; i < 4; i++)
        if (data[i] != (unsigned char)((unsigned long)magic >> (8 * i)))
            return false;
    return true;
}

/* A read-only view of static data that lives as long as the process: the
 * runtime's sources and bytecode stay in the binary's pages, shared by every
 * worker, rather than being copied into each. New reference. */
static PyObject *static_view(const unsigned char *data, size_t len)
{
    return PyMemoryView_FromMemory((char *)data, (Py_ssize_t)len, PyBUF_READ);
}

/* sources() -> dict[str, tuple[memoryview, bool, memoryview | None]]: the
 * embedded runtime by module name: its source (UTF-8), whether it is a package,
 * and its bytecode (marshalled) when it was compiled for this interpreter. */
PyObject *pyimport_sources(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    PyObject *d = PyDict_New();
    size_t plen = strlen(PY_PREFIX);
    for (const struct embedded_file *f = embedded_runtime; d && f->path; f++) {
        size_t n = strlen(f->path);
        if (strncmp(f->path, PY_PREFIX, plen) != 0 || n < plen + 3 ||
            strcmp(f->path + n - 3, ".py") != 0)
            continue;
        char name[256], pyc_path[512];
        snprintf(name, sizeof name, "%.*s", (int)(n - plen - 3), f->path + plen);
        for (char *p = name; *p; p++)
            if (*p == '/')
                *p = '.';
        int is_pkg = 0;
        size_t nl = strlen(name);
        if (nl > 9 && strcmp(name + nl - 9, ".__init__") == 0) {
            name[nl - 9] = 0;
            is_pkg = 1;
        }
        snprintf(pyc_path, sizeof pyc_path, "%sc", f->path);
        const struct embedded_file *pyc = embedded_runtime_find(pyc_path);
        PyObject *code = pyc && pyimport_bytecode_fits(pyc->data, pyc->len)
                             ? static_view(pyc->data + 4, pyc->len - 4)
                             : Py_NewRef(Py_None);
        PyObject *source = static_view(f->data, f->len);
        PyObject *v = code && source ? Py_BuildValue("(OOO)", source,
                                                     is_pkg ? Py_True : Py_False, code)
                                     : NULL;
        if (!v || PyDict_SetItemString(d, name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
        Py_XDECREF(code);
        Py_XDECREF(source);
    }
    return d;
}
/* The embedded runtime's files, once a module of it is imported, are not the
 * worker's to hold: their pages (some 250 kB of bytecode read by the import at
 * start, of 850 kB with the sources, and the neighbours that each page fault
 * maps with the page read) go back after each import from them, at start and
 * when a cell first needs a module imported lazily, and what a later import
 * needs of them is read again, from the page cache. They are never written,
 * so nothing they hold can be lost, and a thread reading them meanwhile reads
 * the same bytes again. */
static void drop_embedded_pages(void)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const struct embedded_file *f = embedded_runtime; f->path; f++) {
        if ((uintptr_t)f->data < lo)
            lo = (uintptr_t)f->data;
        if ((uintptr_t)f->data + f->len + 1 > hi)
            hi = (uintptr_t)f->data + f->len + 1;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* release_sources(): the embedded runtime's pages go back (above); the
 * importer calls it when an import from them has ended. */
PyObject *pyimport_release_sources(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    drop_embedded_pages();
    Py_RETURN_NONE;
}

/* The importer of the embedded runtime, first on sys.meta_path: a finder
 * that makes a plain ModuleSpec and a loader with create_module and
 * exec_module, and nothing of importlib.abc (whose import pulls in
 * importlib.resources, pathlib and tempfile: a third of the worker's start).
 * A module runs from the bytecode compiled at build time when it suits this
 * interpreter, else from its source compiled here. Its filename is
 * "<sandpit>/name.py", so tracebacks say where it is, and get_source gives
 * linecache and inspect its lines. */
static const char bootstrap[] =
    "import sys, marshal, _sandpit\n"
    "from importlib.machinery import ModuleSpec\n"
    "class _EmbeddedImporter:\n"
    "    modules = _sandpit.sources()\n"
    "    depth = 0\n"
    "    def origin(self, name):\n"
    "        return '<sandpit>/' + name.replace('.', '/') + '.py'\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        entry = self.modules.get(name)\n"
    "        if entry is None: return None\n"
    "        return ModuleSpec(name, self, origin=self.origin(name), "
    "is_package=entry[1])\n"
    "    def create_module(self, spec): return None\n"
    "    def exec_module(self, module):\n"
    "        module.__file__ = module.__spec__.origin\n"
    "        self.depth += 1\n"
    "        try: exec(self.get_code(module.__name__), module.__dict__)\n"
    "        finally:\n"
    "            self.depth -= 1\n"
    "            if not self.depth: _sandpit.release_sources()\n"
    "    def get_code(self, name):\n"
    "        source, is_package, code = self.modules[name]\n"
    "        if code is not None: return marshal.loads(code)\n"
    "        return compile(bytes(source), self.origin(name), 'exec', "
    "dont_inherit=True)\n"
    "    def get_source(self, name): return bytes(self.modules[name][0]).decode()\n"
    "    def is_package(self, name): return self.modules[name][1]\n"
    "sys.meta_path.insert(0, _EmbeddedImporter())\n";

int pyimport_install(void)
{
    /* The bootstrap runs in a namespace of its own: its names (sys, importlib,
     * the finder) are not the user's, and a cell deleting them must not break
     * the finder. */
    PyObject *globals = PyDict_New();
    if (globals)
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject *r =
        globals ? PyRun_String(bootstrap, Py_file_input, globals, globals) : NULL;
    Py_XDECREF(globals);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}
