/* pymodule: the built-in module _sandpit, the worker's C under the Python
 * runtime (kernel/python/sandpit/): the link to the supervisor (uplink.h), the
 * output pump (pump.h), the kernel's log, base64, and the embedded runtime's
 * importer's sources (pyimport.h). Every call that may wait releases the GIL. */
#ifndef SANDPIT_PYMODULE_H
#define SANDPIT_PYMODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Makes the module: for PyImport_AppendInittab("_sandpit", ...), before
 * Python is initialised. A new reference, or NULL with an exception set. */
PyObject *pymodule_create(void);

#endif
