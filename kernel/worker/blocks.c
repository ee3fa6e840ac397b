/* blocks: see blocks.h. */
#include "kernel/worker/blocks.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/mem/prefault.h"

#define MAGIC 0x73616e6470697462ULL

struct header {
    uint64_t magic; /* MAGIC ^ the mapping's address */
    size_t len;     /* the mapping's length */
};

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static void *kept[BLOCKS_KEEP_COUNT]; /* (kept_mu) mappings freed and kept */
static size_t kept_bytes;             /* (kept_mu) */

/* A fork while another thread holds the lock (a cell's os.fork, the
 * template's forks) must not leave it held in the child. */
static void lock_kept(void)
{
    pthread_mutex_lock(&kept_mu);
}

static void unlock_kept(void)
{
    pthread_mutex_unlock(&kept_mu);
}

/* Registered when the library is loaded, before any thread can use a block:
 * registered on first use, under pthread_once, a fork while another thread
 * was inside the once left the child waiting on it for ever where
 * pthread_once does not know fork (ThreadSanitizer's own, which the threaded
 * tests run). */
__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(lock_kept, unlock_kept, unlock_kept);
}

static size_t page_size(void)
{
    static size_t page;
    if (!page)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

static struct header *header_of(const void *p)
{
    return (struct header *)((uintptr_t)p - BLOCKS_HEADER);
}

static void *mark(void *map, size_t len)
{
    struct header *h = map;
    h->magic = MAGIC ^ (uintptr_t)map;
    h->len = len;
    return (char *)map + BLOCKS_HEADER;
}

/* The mapping length for size bytes, or 0 if it would overflow. */
static size_t length_for(size_t size)
{
    size_t page = page_size();
    if (size > SIZE_MAX - BLOCKS_HEADER - page)
        return 0;
    return (size + BLOCKS_HEADER + page - 1) & ~(page - 1);
}

/* A kept mapping of len to twice len bytes, taken out of the kept ones. */
static void *take_kept(size_t len, size_t *got)
{
    void *best = NULL;
    int at = -1;
    pthread_mutex_lock(&kept_mu);
    for (int i = 0; i < BLOCKS_KEEP_COUNT; i++) {
        if (!kept[i])
            continue;
        size_t l = ((struct header *)kept[i])->len;
        if (l >= len && l / 2 <= len && (!best || l < ((struct header *)best)->len)) {
            best = kept[i];
            at = i;
        }
    }
    if (best) {
        kept[at] = NULL;
        *got = ((struct header *)best)->len;
        kept_bytes -= *got;
    }
    pthread_mutex_unlock(&kept_mu);
    return best;
}

static void *map_new(size_t len)
{
    void *map =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED && blocks_release())
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return NULL;
    prefault_range(map, len);
    return map;
}

void *blocks_alloc(size_t size)
{
    size_t len = length_for(size < BLOCKS_FROM ? BLOCKS_FROM : size);
    if (!len)
        return NULL;
    size_t got = len;
    void *map = take_kept(len, &got);
    if (!map && !(map = map_new(len)))
        return NULL;
    return mark(map, got);
}

/* The header's place before one of glibc's blocks is the same page as the
 * block (blocks.h), but to AddressSanitizer it is another block's red zone:
 * it is read unchecked. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_ASAN __attribute__((no_sanitize("address")))
#endif
#endif
#if !defined(NO_ASAN) && defined(__SANITIZE_ADDRESS__)
#define NO_ASAN __attribute__((no_sanitize("address")))
#endif
#ifndef NO_ASAN
#define NO_ASAN
#endif

NO_ASAN bool blocks_owns(const void *p)
{
    if (!p || ((uintptr_t)p & (page_size() - 1)) != BLOCKS_HEADER)
        return false;
    const struct header *h = header_of(p);
    return h->magic == (MAGIC ^ (uintptr_t)h);
}

size_t blocks_capacity(const void *p)
{
    return header_of(p)->len - BLOCKS_HEADER;
}

static void unmap(struct header *h)
{
    size_t len = h->len;
    h->magic = 0; /* a stale pointer to it is not taken for a block */
    munmap(h, len);
}

void blocks_free(void *p)
{
    struct header *h = header_of(p);
    size_t len = h->len;
    struct header *evicted[BLOCKS_KEEP_COUNT];
    int nevicted = 0;
    bool keep = false;
    pthread_mutex_lock(&kept_mu);
    /* Room for it, made by giving back smaller ones if need be: the larger a
     * block, the more faults its reuse saves. */
    while (len <= BLOCKS_KEEP) {
        int slot = -1, smallest = -1;
        for (int i = 0; i < BLOCKS_KEEP_COUNT; i++) {
            if (!kept[i])
                slot = i;
            else if (smallest < 0 || ((struct header *)kept[i])->len <
                                         ((struct header *)kept[smallest])->len)
                smallest = i;
        }
        if (slot >= 0 && kept_bytes + len <= BLOCKS_KEEP) {
            kept[slot] = h;
            kept_bytes += len;
            keep = true;
            break;
        }
        if (smallest < 0 || ((struct header *)kept[smallest])->len >= len)
            break;
        evicted[nevicted++] = kept[smallest];
        kept_bytes -= ((struct header *)kept[smallest])->len;
        kept[smallest] = NULL;
    }
    pthread_mutex_unlock(&kept_mu);
    for (int i = 0; i < nevicted; i++)
        unmap(evicted[i]);
    if (!keep)
        unmap(h);
}

void *blocks_realloc(void *p, size_t size)
{
    struct header *h = header_of(p);
    size_t old = h->len;
    size_t len = length_for(size < BLOCKS_FROM ? BLOCKS_FROM : size);
    if (!len)
        return NULL;
    /* Shrunk by less than half: kept whole, pages and all. Python makes some
     * blocks twice what they may need and then shrinks them (binascii's
     * base64 does), and the next such block then fits in this one. */
    if (len <= old && len >= old / 2)
        return p;
    void *map = mremap(h, old, len, MREMAP_MAYMOVE);
    if (map == MAP_FAILED && blocks_release())
        map = mremap(h, old, len, MREMAP_MAYMOVE);
    if (map == MAP_FAILED)
        return NULL;
    if (len > old)
        prefault_range((char *)map + old, len - old);
    return mark(map, len);
}

size_t blocks_release(void)
{
    void *maps[BLOCKS_KEEP_COUNT];
    int n = 0;
    pthread_mutex_lock(&kept_mu);
    for (int i = 0; i < BLOCKS_KEEP_COUNT; i++) {
        if (kept[i])
            maps[n++] = kept[i];
        kept[i] = NULL;
    }
    size_t freed = kept_bytes;
    kept_bytes = 0;
    pthread_mutex_unlock(&kept_mu);
    for (int i = 0; i < n; i++)
        unmap(maps[i]);
    return freed;
}

size_t blocks_kept(void)
{
    pthread_mutex_lock(&kept_mu);
    size_t n = kept_bytes;
    pthread_mutex_unlock(&kept_mu);
    return n;
}
