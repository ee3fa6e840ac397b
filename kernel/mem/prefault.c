/* prefault: see prefault.h. */
#include "kernel/mem/prefault.h"

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct search {
    const char *name;
    long mapped;
    int err;
};

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct search *s = data;
    /* The program itself comes first, named "" */
    if (s->name
            ? !info->dlpi_name || !*info->dlpi_name || !strstr(info->dlpi_name, s->name)
            : info->dlpi_name && *info->dlpi_name)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t relro_end = 0; /* read-only once relocated: not writable now */
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
            relro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
                         info->dlpi_phdr[i].p_memsz) &
                        ~(page - 1);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t end =
            (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        if (relro_end > start && relro_end < end)
            start = relro_end;
        if (madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0)
            s->mapped += (long)(end - start);
        else
            s->err = errno;
    }
    return 1;
}

long prefault_library_data(const char *name)
{
    struct search s = {name, 0, 0};
    if (!dl_iterate_phdr(each_object, &s))
        return -ENOENT;
    return s.mapped || !s.err ? s.mapped : -s.err;
}

int prefault_range(void *addr, size_t len)
{
    static int unsupported; /* the kernel's answer, once it said no */
    if (unsupported)
        return -unsupported;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)addr & ~(page - 1);
    uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    if (len == 0 || madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0)
        return 0;
    int err = errno;
    if (err == EINVAL)
        unsupported = err;
    return -err;
}

void *prefault_malloc(size_t size)
{
    void *p = malloc(size);
    if (p && size >= PREFAULT_LARGE)
        prefault_range(p, size);
    return p;
}
