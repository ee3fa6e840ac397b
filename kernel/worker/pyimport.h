/* pyimport: the importer of the embedded runtime, in the worker. The runtime
 * (kernel/python/sandpit/) is compiled into the worker (embedded.h); this
 * serves it to Python's import from there, so that the worker needs no files
 * of its own on disk and a sandboxed worker cannot be fed a different one.
 * Nothing here is owned by the caller: the runtime's bytes are static. */
#ifndef SANDPIT_PYIMPORT_H
#define SANDPIT_PYIMPORT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stddef.h>

/* Puts the importer first on sys.meta_path. Needs _sandpit importable
 * (pymodule.h). 0, or -1 with Python's exception set. */
int pyimport_install(void);

/* _sandpit.sources() and _sandpit.release_sources(), the importer's two
 * methods of the module (pymodule.c's table): new references. */
PyObject *pyimport_sources(PyObject *self, PyObject *args);
PyObject *pyimport_release_sources(PyObject *self, PyObject *args);

/* True when data (an embedded ".pyc" entry: the magic number of the Python that
 * compiled it, then marshalled code; see kernel/embed.py) was compiled for this
 * interpreter's version; otherwise the worker compiles the source. Call it once
 * Python is initialised (the magic number is its importer's). */
bool pyimport_bytecode_fits(const unsigned char *data, size_t len);

#endif
