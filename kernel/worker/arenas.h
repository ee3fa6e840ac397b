/* arenas: the mappings Python keeps its small objects in (its "arenas", of
 * 1 MiB each), mapped here rather than by Python so that start-up does not
 * pay a page fault for each of their pages.
 *
 * A worker's start writes some 4 MB of small objects (modules, functions,
 * strings), page after page of fresh arenas. On a virtual machine a page
 * fault costs about 12 µs (measured on the one this was written on), while a
 * page mapped with the others in one call (MAP_POPULATE) costs under 1 µs:
 * so while the worker starts, each arena is mapped whole at once. An arena
 * is filled from its start, so most of its pages are written soon; the rest,
 * still zero when start-up ends, go back then (arenas_settle), and from then
 * on arenas are mapped as usual, their pages coming when first written.
 *
 * Giving back a page that holds only zeros changes nothing a program can
 * see: a private anonymous page that is not there reads as zeros. It is safe
 * only while nothing else writes to the arenas, which is why it is done once,
 * at the end of start-up, by the thread that holds Python's lock, before any
 * user code has run. */
#ifndef SANDPIT_ARENAS_H
#define SANDPIT_ARENAS_H

#include <stdbool.h>
#include <stddef.h>

#define ARENAS_TRACKED 64 /* arenas made during start-up that settling looks at */

/* Python's arena allocator (PyObjectArenaAllocator's alloc and free). */
void *arenas_map(void *ctx, size_t size);
void arenas_unmap(void *ctx, void *ptr, size_t size);

/* Ends start-up: the pages of the arenas made so far that are still zero go
 * back to the system, and later arenas are no longer populated when mapped.
 * Returns the bytes given back. Once; later calls do nothing. */
size_t arenas_settle(void);

/* Whether arenas are still populated when mapped (before arenas_settle). */
bool arenas_populating(void);

#endif
