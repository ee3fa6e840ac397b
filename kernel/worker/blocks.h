/* blocks: the worker's large blocks, each a mapping of its own, mapped in one
 * call when it is made, and a few of them kept for the next cell when freed.
 *
 * A chart's base64 or a big output's text is a block of megabytes, written
 * from end to end as soon as it is made. On a virtual machine each new page
 * costs a fault of several microseconds (17 on the one this was measured on,
 * 8 when many are mapped in one call), so a 10 MB chart paid some 40 ms in
 * faults for its base64 alone, at every display. glibc gives such blocks
 * back to the system as soon as they are freed; here up to BLOCKS_KEEP_COUNT
 * of them, BLOCKS_KEEP bytes in all, are kept, and a later block of about
 * the same size reuses one, its pages already there.
 *
 * What is kept is memory the worker holds without using, so it is bounded,
 * given back when an allocation fails (blocks_release, then the allocation
 * is tried again), and given back once the worker has been idle for a second
 * (uplink.c). Everything else stays glibc's: small blocks, and zeroed ones
 * (calloc), which a program may use sparsely (bytearray(n)).
 *
 * A block is told from glibc's by where it starts (BLOCKS_HEADER bytes into
 * a page) and by the header there, which holds a value made from its own
 * address: glibc's blocks that start at that offset have their own chunk
 * header in the same page, so reading it is always safe. */
#ifndef SANDPIT_BLOCKS_H
#define SANDPIT_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>

#define BLOCKS_FROM       (256u << 10) /* the smallest block made here */
#define BLOCKS_KEEP       (64u << 20)  /* bytes kept when freed, at most */
#define BLOCKS_KEEP_COUNT 4            /* blocks kept, at most */
#define BLOCKS_HEADER     64

/* A new block of at least size bytes, 16-byte aligned, its pages mapped; a
 * kept one when one fits (of size to twice size). NULL when out of memory,
 * after what was kept has been given back. */
void *blocks_alloc(size_t size);

/* Whether p (any pointer from malloc, or NULL) is a block from here. */
bool blocks_owns(const void *p);

/* How many bytes the block p can hold. */
size_t blocks_capacity(const void *p);

/* Keeps the block for reuse if there is room, made if need be by unmapping
 * smaller ones kept; or unmaps it. */
void blocks_free(void *p);

/* The block p resized to hold size bytes (at least BLOCKS_FROM), its content
 * kept up to the smaller size; it may move. A block shrunk by less than half
 * keeps its pages. NULL when out of memory, and p is then unchanged. */
void *blocks_realloc(void *p, size_t size);

/* Unmaps the blocks kept. Returns the bytes given back. */
size_t blocks_release(void);

/* The bytes kept now. */
size_t blocks_kept(void);

#endif
