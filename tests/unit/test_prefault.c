/* Unit tests for prefault: a loaded library's writable segment is mapped by
 * one call (each of its pages is the process's own copy before anything
 * writes it), and so is the program's own; a library that is not loaded is
 * said to be missing; a range
 * is mapped whole, and only it, without a change to what it holds, and so is a
 * large block from prefault_malloc. Where the kernel lacks MADV_POPULATE_WRITE
 * (before Linux 5.14) the calls must fail with EINVAL and change nothing. */
#include <Python.h>

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/mem/prefault.h"
#include "testing.h"

/* The last byte that libpython's writable segment takes from the file: past
 * the part made read-only after relocation, which comes first. */
static int last_data_byte(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libpython"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && ph->p_filesz)
            *(uintptr_t *)data = info->dlpi_addr + ph->p_vaddr + ph->p_filesz - 1;
    }
    return 1;
}

/* The mapping (from /proc/self/smaps) that holds addr: its pages, and how many
 * of them this process has its own copy of (written, or mapped for writing). */
static void own_pages(uintptr_t addr, size_t *own, size_t *pages)
{
    *own = *pages = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return;
    char line[512];
    bool inside = false;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b, kb;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s ", &a, &b, perms) == 3) {
            inside = a <= addr && addr < b;
            if (inside)
                *pages = (b - a) / page;
        } else if (inside && sscanf(line, "Anonymous: %lu kB", &kb) == 1) {
            *own = kb * 1024 / page;
        }
    }
    fclose(f);
}

/* Whether the kernel has MADV_POPULATE_WRITE: tried on a page of its own. */
static bool kernel_populates(void)
{
    void *p =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bool yes = p != MAP_FAILED && madvise(p, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
    if (p != MAP_FAILED)
        munmap(p, 4096);
    return yes;
}

static void test_a_library_segment_is_mapped_in_one_call(void)
{
    /* The mapping of libpython's data, mostly unwritten so far (CPython has
     * not started). */
    uintptr_t data = 0;
    dl_iterate_phdr(last_data_byte, &data);
    REQUIRE(data != 0);
    size_t own, pages;
    own_pages(data, &own, &pages);
    REQUIRE(pages > 0 && own < pages);
    long mapped = prefault_library_data("libpython");
    if (!kernel_populates()) {
        CHECK_INT(mapped, -EINVAL);
        testing_skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14): the call "
                     "fails and maps nothing");
    }
    CHECK(mapped >= (long)(pages * (size_t)sysconf(_SC_PAGESIZE)));
    own_pages(data, &own, &pages);
    CHECK_INT(own, pages);
    /* Nothing it holds has changed: CPython starts and runs. */
    Py_InitializeEx(0);
    CHECK_INT(PyRun_SimpleString("assert sum(range(10)) == 45"), 0);
    Py_FinalizeEx();
}

/* In this program's bss, untouched until the test. */
static unsigned char own_bss[64 * 4096] __attribute__((aligned(4096)));

static size_t resident(const void *p, size_t n);

static void test_the_programs_own_segment_is_mapped(void)
{
    size_t before = resident(own_bss, 64);
    CHECK(before < 64);
    long mapped = prefault_library_data(NULL);
    if (!kernel_populates()) {
        CHECK_INT(mapped, -EINVAL);
        testing_skip("no MADV_POPULATE_WRITE: the call fails");
    }
    CHECK(mapped >= (long)sizeof own_bss);
    CHECK_INT(resident(own_bss, 64), 64);
    CHECK_INT(own_bss[12345], 0);
}

static void test_a_library_not_loaded_is_missing(void)
{
    CHECK_INT(prefault_library_data("libnothing-of-the-sort"), -ENOENT);
}

/* How many of the n pages from p are in memory. */
static size_t resident(const void *p, size_t n)
{
    unsigned char vec[64];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), in = 0;
    if (n > sizeof vec || mincore((void *)p, n * page, vec) != 0)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    return in;
}

static void test_a_range_is_mapped_whole_and_alone(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p =
        mmap(NULL, 32 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    p[10 * page + 5] = 42; /* written before: kept */
    CHECK_INT(resident(p, 32), 1);
    /* From inside page 8 to inside page 19: pages 8 to 19, rounded out. */
    int rc = prefault_range(p + 8 * page + 100, 11 * page);
    if (!kernel_populates()) {
        CHECK_INT(rc, -EINVAL);
        CHECK_INT(resident(p, 32), 1);
        munmap(p, 32 * page);
        testing_skip("no MADV_POPULATE_WRITE: the call fails");
    }
    CHECK_INT(rc, 0);
    CHECK_INT(resident(p, 8), 0);
    CHECK_INT(resident(p + 8 * page, 12), 12);
    CHECK_INT(resident(p + 20 * page, 12), 0);
    CHECK_INT(p[10 * page + 5], 42);
    CHECK_INT(p[12 * page], 0);
    CHECK_INT(prefault_range(p, 0), 0);
    munmap(p, 32 * page);
}

static void test_a_large_block_is_mapped_when_it_is_made(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* Larger than glibc maps apart (128 kB by default): pages of its own. */
    size_t size = PREFAULT_LARGE;
    REQUIRE(size <= 64 * page);
    unsigned char *p = prefault_malloc(size);
    REQUIRE(p);
    unsigned char *first = (unsigned char *)(((uintptr_t)p + page - 1) & ~(page - 1));
    size_t whole = (size_t)(p + size - first) / page;
    CHECK_INT(resident(first, whole), kernel_populates() ? whole : 0);
    memset(p, 7, size);
    free(p);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_library_segment_is_mapped_in_one_call),
    TESTING_CASE(test_a_library_not_loaded_is_missing),
    TESTING_CASE(test_the_programs_own_segment_is_mapped),
    TESTING_CASE(test_a_range_is_mapped_whole_and_alone),
    TESTING_CASE(test_a_large_block_is_mapped_when_it_is_made),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
