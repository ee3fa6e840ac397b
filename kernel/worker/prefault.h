/* prefault: CPython's data segment mapped in one call rather than a page
 * fault per page.
 *
 * Starting CPython writes most of its data segment (its static types and
 * deep-frozen modules): some 450 pages, each copied from the file on its
 * first write. On some machines, virtual ones above all, a page fault costs
 * several times what the same page costs when one call maps many, so the
 * segment is mapped before Py_Initialize with MADV_POPULATE_WRITE (Linux
 * 5.14); elsewhere the call fails and the pages fault in as before. It maps
 * only what start-up writes anyway (the segment is 1.7 MB in Debian's 3.11).
 *
 * Python's object arenas were tried the same way, and from transparent huge
 * pages: that saved another 10 ms of start-up, but start-up touches only a
 * few pages of each arena, and the worker's memory grew by 3 to 6 MB. */
#ifndef SANDPIT_PREFAULT_H
#define SANDPIT_PREFAULT_H

/* Maps now the writable segment (data and bss, but not the part made
 * read-only after relocation) of the loaded library whose file name contains
 * name. Returns the bytes mapped (0: it has none), or -errno: -ENOENT when no
 * such library is loaded, -EINVAL from a kernel without MADV_POPULATE_WRITE. */
long prefault_library_data(const char *name);

#endif
