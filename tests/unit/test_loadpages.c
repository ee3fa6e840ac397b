/* Unit tests for loadpages: after loadpages_release(), the pages of libc's
 * first segment (its symbol and relocation tables) are no longer part of the
 * process, what they held reads back the same, and nothing the process wrote
 * is lost. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/mem/loadpages.h"
#include "testing.h"

struct segment {
    const unsigned char *start;
    size_t len;
};

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct segment *s = data;
    if (!strstr(info->dlpi_name, "/libc.so"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && p->p_offset == 0 && p->p_flags == PF_R) {
            s->start = (const unsigned char *)(info->dlpi_addr + p->p_vaddr);
            s->len = p->p_filesz & ~(size_t)(sysconf(_SC_PAGESIZE) - 1);
        }
    }
    return 1;
}

/* The pages of [start, start + len) mapped in this process, from its pagemap. */
static size_t present_pages(const unsigned char *start, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    for (size_t off = 0; off < len; off += page) {
        uint64_t entry = 0;
        REQUIRE(pread(fd, &entry, sizeof entry,
                      (off_t)(((uintptr_t)start + off) / page * sizeof entry)) ==
                (ssize_t)sizeof entry);
        n += (entry >> 63) & 1;
    }
    close(fd);
    return n;
}

static int written = 1;

static void test_the_loaders_pages_go_back_and_read_the_same(void)
{
    struct segment libc = {0};
    dl_iterate_phdr(find_libc, &libc);
    REQUIRE(libc.start && libc.len > 0);
    unsigned char *copy = malloc(libc.len);
    REQUIRE(copy != NULL);
    memcpy(copy, libc.start, libc.len); /* every page of it mapped now */
    CHECK(present_pages(libc.start, libc.len) ==
          libc.len / (size_t)sysconf(_SC_PAGESIZE));
    written = 42;
    /* Nothing between the two calls binds a new call, whose lookup would read
     * the tables again. */
    size_t released = loadpages_release();
    size_t after = present_pages(libc.start, libc.len);
    CHECK(released >= libc.len);
    CHECK_INT(after, 0);
    /* Read again from the file: the same bytes, and the symbols still resolve. */
    CHECK(memcmp(copy, libc.start, libc.len) == 0);
    CHECK(dlsym(RTLD_DEFAULT, "strverscmp") != NULL);
    /* Two constants on purpose: the call, not its answer, is what is checked. */
    /* cppcheck-suppress staticStringCompare */
    CHECK(strverscmp("a2", "a10") < 0);
    /* What the process wrote stays. */
    CHECK_INT(written, 42);
    CHECK(copy[0] == 0x7f && copy[1] == 'E');
    free(copy);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_the_loaders_pages_go_back_and_read_the_same),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
