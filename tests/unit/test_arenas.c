/* Unit tests for arenas: until start-up ends an arena is mapped with its pages
 * already there; settling gives back the pages still zero, and only those,
 * keeping what was written; arenas made after it, or unmapped before it, are
 * left alone. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/worker/arenas.h"
#include "testing.h"

#define ARENA (1u << 20)

/* How many of the pages of [p, p + size) are in memory. */
static size_t resident(void *p, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = size / page, in = 0;
    unsigned char vec[ARENA / 4096];
    REQUIRE(n <= sizeof vec);
    REQUIRE(mincore(p, size, vec) == 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    return in;
}

static void test_an_arena_made_during_start_up_has_its_pages(void)
{
    CHECK(arenas_populating());
    unsigned char *a = arenas_map(NULL, ARENA);
    REQUIRE(a);
    CHECK_INT((long)resident(a, ARENA), (long)(ARENA / sysconf(_SC_PAGESIZE)));
    arenas_unmap(NULL, a, ARENA);
}

static void test_settling_gives_back_the_zero_pages_and_keeps_the_written(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *a = arenas_map(NULL, ARENA);
    REQUIRE(a);
    /* The first quarter written as Python fills an arena, and one page
     * further on; a page written back to zeros counts as zero. */
    memset(a, 0x5a, ARENA / 4);
    a[ARENA / 2 + 7] = 1;
    memset(a + ARENA / 2 + page, 0, page);
    size_t back = arenas_settle();
    CHECK(!arenas_populating());
    size_t kept = ARENA / 4 + page;
    CHECK_INT((long)back, (long)(ARENA - kept));
    CHECK_INT((long)resident(a, ARENA), (long)(kept / page));
    bool intact = true;
    for (size_t i = 0; i < ARENA / 4; i++)
        intact &= a[i] == 0x5a;
    CHECK(intact);
    CHECK_INT(a[ARENA / 2 + 7], 1);
    CHECK_INT(a[ARENA - 1], 0);          /* given back, it reads as zero */
    CHECK_INT((long)arenas_settle(), 0); /* once */
    arenas_unmap(NULL, a, ARENA);
}

static void test_later_arenas_come_as_usual(void)
{
    arenas_settle();
    unsigned char *a = arenas_map(NULL, ARENA);
    REQUIRE(a);
    CHECK_INT((long)resident(a, ARENA), 0);
    a[0] = 1;
    CHECK_INT((long)resident(a, ARENA), 1);
    arenas_unmap(NULL, a, ARENA);
}

static void test_an_arena_unmapped_before_settling_is_not_looked_at(void)
{
    unsigned char *a = arenas_map(NULL, ARENA), *b = arenas_map(NULL, ARENA);
    REQUIRE(a && b);
    memset(b, 1, ARENA);
    arenas_unmap(NULL, a, ARENA); /* settling would fault on it */
    CHECK_INT((long)arenas_settle(), 0);
    CHECK_INT((long)resident(b, ARENA), (long)(ARENA / sysconf(_SC_PAGESIZE)));
    arenas_unmap(NULL, b, ARENA);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_an_arena_made_during_start_up_has_its_pages),
    TESTING_CASE(test_settling_gives_back_the_zero_pages_and_keeps_the_written),
    TESTING_CASE(test_later_arenas_come_as_usual),
    TESTING_CASE(test_an_arena_unmapped_before_settling_is_not_looked_at),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
