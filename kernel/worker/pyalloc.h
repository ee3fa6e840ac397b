/* pyalloc: Python's raw allocator, wrapped in the worker so that its large
 * blocks are blocks.h's (mapped at once, kept for the next cell) and a failed
 * allocation is tried again once the blocks kept are given back. Holds no
 * memory of its own but the wrapped allocator's table. */
#ifndef SANDPIT_PYALLOC_H
#define SANDPIT_PYALLOC_H

/* Wraps PYMEM_DOMAIN_RAW, once, right after Python is initialised, and has the
 * blocks kept given back whenever the worker waits for a request
 * (uplink_on_idle). */
void pyalloc_wrap(void);

#endif
