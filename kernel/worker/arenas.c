/* arenas: Python's arenas, populated while the worker starts (arenas.h). */
#include "kernel/worker/arenas.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static bool settled;
static struct {
    void *ptr;
    size_t size;
} tracked[ARENAS_TRACKED];

void *arenas_map(void *ctx, size_t size)
{
    (void)ctx;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (settled ? 0 : MAP_POPULATE);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    for (size_t i = 0; !settled && i < ARENAS_TRACKED; i++)
        if (!tracked[i].ptr) {
            tracked[i].ptr = p;
            tracked[i].size = size;
            break;
        }
    return p;
}

void arenas_unmap(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    for (size_t i = 0; i < ARENAS_TRACKED; i++)
        if (tracked[i].ptr == ptr)
            tracked[i].ptr = NULL;
    munmap(ptr, size);
}

static bool page_is_zero(const unsigned char *page, size_t len)
{
    const uint64_t *w = (const uint64_t *)page;
    for (size_t i = 0; i < len / sizeof *w; i++)
        if (w[i])
            return false;
    return true;
}

/* Gives back the pages of [base, base + size) that hold only zeros, in runs. */
static size_t drop_zero_pages(unsigned char *base, size_t size, size_t page)
{
    size_t dropped = 0, run = 0;
    for (size_t off = 0; off <= size; off += page) {
        bool zero = off < size && page_is_zero(base + off, page);
        if (zero) {
            run += page;
            continue;
        }
        if (run && madvise(base + off - run, run, MADV_DONTNEED) == 0)
            dropped += run;
        run = 0;
    }
    return dropped;
}

size_t arenas_settle(void)
{
    if (settled)
        return 0;
    settled = true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), dropped = 0;
    for (size_t i = 0; i < ARENAS_TRACKED; i++)
        if (tracked[i].ptr) {
            dropped += drop_zero_pages(tracked[i].ptr, tracked[i].size, page);
            tracked[i].ptr = NULL;
        }
    return dropped;
}

bool arenas_populating(void)
{
    return !settled;
}
