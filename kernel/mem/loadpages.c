/* loadpages: see loadpages.h. */
#include "kernel/mem/loadpages.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static int has_text_relocations(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *d =
            (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_TEXTREL ||
                (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                return 1;
    }
    return 0;
}

static int release_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    size_t *total = data;
    /* The program ("") and the libraries (by path); not the vDSO, which is
     * no file's. */
    if (!info->dlpi_name || (info->dlpi_name[0] && info->dlpi_name[0] != '/'))
        return 0;
    if (has_text_relocations(info))
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = 0, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || p->p_offset != 0 || p->p_flags != PF_R)
            continue;
        /* Whole pages inside the segment's file bytes: a page that it shares
         * with the next segment (which may be written) is left alone. */
        lo = (info->dlpi_addr + p->p_vaddr + page - 1) & ~(page - 1);
        hi = (info->dlpi_addr + p->p_vaddr + p->p_filesz) & ~(page - 1);
        break;
    }
    /* After the last read of the program headers, which are in those pages. */
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0)
        *total += hi - lo;
    return 0;
}

size_t loadpages_release(void)
{
    size_t total = 0;
    dl_iterate_phdr(release_one, &total);
    return total;
}
