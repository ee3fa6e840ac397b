/* pyalloc: the wrapped raw allocator of Python (pyalloc.h).
 *
 * Python's allocator for the blocks it does not pool (over 512 bytes),
 * wrapped: a new block of BLOCKS_FROM bytes or more is one of blocks.h's
 * (mapped at once, kept for reuse when freed), and an allocation that fails
 * is tried again once the blocks kept have been given back. Zeroed blocks
 * stay glibc's (blocks.h says why), and so does a block glibc made, however
 * it is resized. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernel/worker/pyalloc.h"

#include <string.h>

#include "kernel/worker/blocks.h"
#include "kernel/worker/uplink.h"

static PyMemAllocatorEx raw_allocator;

static void *raw_malloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = size >= BLOCKS_FROM ? blocks_alloc(size) : NULL;
    if (!p)
        p = raw_allocator.malloc(raw_allocator.ctx, size);
    if (!p && blocks_release())
        p = raw_allocator.malloc(raw_allocator.ctx, size);
    return p;
}

static void *raw_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    void *p = raw_allocator.calloc(raw_allocator.ctx, nelem, elsize);
    if (!p && blocks_release())
        p = raw_allocator.calloc(raw_allocator.ctx, nelem, elsize);
    return p;
}

static void *raw_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return raw_malloc(ctx, size);
    if (blocks_owns(ptr)) {
        if (size >= BLOCKS_FROM)
            return blocks_realloc(ptr, size);
        /* Shrunk below the size of a block: into one of glibc's. */
        void *p = raw_malloc(ctx, size ? size : 1);
        if (p) {
            memcpy(p, ptr, size);
            blocks_free(ptr);
        }
        return p;
    }
    void *p = raw_allocator.realloc(raw_allocator.ctx, ptr, size);
    if (!p && blocks_release())
        p = raw_allocator.realloc(raw_allocator.ctx, ptr, size);
    return p;
}

static void raw_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (blocks_owns(ptr))
        blocks_free(ptr);
    else
        raw_allocator.free(raw_allocator.ctx, ptr);
}

static void release_blocks(void)
{
    blocks_release();
}

void pyalloc_wrap(void)
{
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &raw_allocator);
    PyMemAllocatorEx wrapped = {NULL, raw_malloc, raw_calloc, raw_realloc, raw_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &wrapped);
    uplink_on_idle(release_blocks);
}
