/* prefault: memory that is about to be written mapped in one call rather
 * than a page fault per page.
 *
 * On some machines, virtual ones above all, a page fault costs several times
 * what the same page costs when one call maps many (17 us against 2 us on the
 * virtual machine this was measured on). MADV_POPULATE_WRITE (Linux 5.14)
 * maps a range without changing what it holds; elsewhere the call fails and
 * the pages fault in as before.
 *
 * Two kinds of memory are mapped this way:
 * - CPython's data segment, before Py_Initialize (libpython's, or the
 *   worker's own where CPython is linked into it). Starting CPython writes
 *   most of it (its static types and deep-frozen modules): some 450 pages,
 *   each copied from the file on its first write. The segment is 1.7 MB in
 *   Debian's 3.11.
 * - A new large block that is about to be written from end to end: a chart's
 *   base64 in the worker (kernel/worker/blocks.h), and on the supervisor's
 *   side the link's buffer for a large frame, the frame's parts and the
 *   messages made of them.
 *
 * Python's object arenas were tried the same way, and from transparent huge
 * pages: that saved another 10 ms of start-up, but start-up touches only a
 * few pages of each arena, and the worker's memory grew by 3 to 6 MB. */
#ifndef SANDPIT_PREFAULT_H
#define SANDPIT_PREFAULT_H

#include <stddef.h>

/* Maps now the writable segment (data and bss, but not the part made
 * read-only after relocation) of the loaded library whose file name contains
 * name, or of the program itself when name is NULL (the worker, where CPython
 * is linked into it). Returns the bytes mapped (0: it has none), or -errno:
 * -ENOENT when no such library is loaded, -EINVAL from a kernel without
 * MADV_POPULATE_WRITE. */
long prefault_library_data(const char *name);

/* Maps now the pages of [addr, addr + len) (rounded out to whole pages) that
 * are not mapped yet, without changing what they hold. Returns 0, or -errno
 * (-EINVAL from a kernel without MADV_POPULATE_WRITE, after which every later
 * call returns it at once). */
int prefault_range(void *addr, size_t len);

/* The size from which a new block is mapped at once. */
#define PREFAULT_LARGE (256u << 10)

/* malloc(size), with the block mapped at once when it is at least
 * PREFAULT_LARGE: for a block that is about to be written whole. */
void *prefault_malloc(size_t size);

#endif
