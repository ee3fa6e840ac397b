/* Unit tests for blocks: a block is told from glibc's, a freed one is kept and
 * reused by a block of about its size (not by one much smaller, nor one
 * larger), the larger blocks are kept before the smaller, what is kept is
 * bounded and given back, and resizing keeps the content. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/worker/blocks.h"
#include "testing.h"

#define MiB (1u << 20)

static void test_a_block_is_told_from_glibcs(void)
{
    void *b = blocks_alloc(MiB);
    REQUIRE(b);
    CHECK(blocks_owns(b));
    CHECK(((uintptr_t)b & 15) == 0);
    CHECK(blocks_capacity(b) >= MiB);
    memset(b, 1, MiB);
    CHECK(!blocks_owns(NULL));
    /* glibc's, small and mapped apart, and many of them, whatever their offset */
    for (int i = 0; i < 2000; i++) {
        void *g = malloc((size_t)(i % 7 == 0 ? 300 << 10 : 16 + 48 * i));
        REQUIRE(g);
        CHECK(!blocks_owns(g));
        free(g);
    }
    blocks_free(b);
    blocks_release();
}

static void test_a_freed_block_is_reused_by_one_of_about_its_size(void)
{
    blocks_release();
    char *b = blocks_alloc(4 * MiB);
    REQUIRE(b);
    b[0] = 'x';
    blocks_free(b);
    CHECK(blocks_kept() >= 4 * MiB);
    /* much smaller: a new one, the kept one stays */
    char *small = blocks_alloc(MiB);
    REQUIRE(small);
    CHECK(small != b);
    blocks_free(small);
    /* larger: a new one */
    char *large = blocks_alloc(5 * MiB);
    REQUIRE(large);
    CHECK(large != b);
    blocks_free(large);
    /* about its size: the same block, its pages still there */
    blocks_release();
    b = blocks_alloc(4 * MiB);
    REQUIRE(b);
    blocks_free(b);
    char *again = blocks_alloc(3 * MiB);
    CHECK(again == b);
    CHECK_INT(blocks_kept(), 0);
    blocks_free(again);
    CHECK(blocks_release() >= 4 * MiB);
    CHECK_INT(blocks_kept(), 0);
}

static void test_what_is_kept_is_bounded_and_the_larger_stay(void)
{
    blocks_release();
    void *b[BLOCKS_KEEP_COUNT + 1];
    for (int i = 0; i <= BLOCKS_KEEP_COUNT; i++)
        REQUIRE((b[i] = blocks_alloc(BLOCKS_FROM)));
    for (int i = 0; i <= BLOCKS_KEEP_COUNT; i++)
        blocks_free(b[i]);
    CHECK(blocks_kept() <= BLOCKS_KEEP_COUNT * (BLOCKS_FROM + 2 * BLOCKS_HEADER + 4096));
    /* a larger one takes the place of a smaller */
    char *big = blocks_alloc(8 * MiB);
    REQUIRE(big);
    blocks_free(big);
    CHECK(blocks_kept() >= 8 * MiB);
    CHECK(blocks_alloc(8 * MiB) == big);
    blocks_free(big);
    /* one larger than what may be kept is given back at once */
    size_t before = blocks_kept();
    void *huge = blocks_alloc(BLOCKS_KEEP + MiB);
    REQUIRE(huge);
    blocks_free(huge);
    CHECK_INT(blocks_kept(), before);
    CHECK(blocks_kept() <= BLOCKS_KEEP);
    blocks_release();
}

static void test_resizing_keeps_the_content(void)
{
    blocks_release();
    unsigned char *b = blocks_alloc(MiB);
    REQUIRE(b);
    for (size_t i = 0; i < MiB; i++)
        b[i] = (unsigned char)(i * 7);
    unsigned char *g = blocks_realloc(b, 9 * MiB);
    REQUIRE(g);
    CHECK(blocks_owns(g));
    CHECK(blocks_capacity(g) >= 9 * MiB);
    bool same = true;
    for (size_t i = 0; i < MiB; i++)
        same = same && g[i] == (unsigned char)(i * 7);
    CHECK(same);
    g[9 * MiB - 1] = 1;
    /* shrunk by less than half: in place, its capacity kept */
    size_t cap = blocks_capacity(g);
    CHECK(blocks_realloc(g, 6 * MiB) == g);
    CHECK_INT(blocks_capacity(g), cap);
    /* by more: its capacity goes */
    unsigned char *s = blocks_realloc(g, MiB);
    REQUIRE(s);
    CHECK(blocks_capacity(s) < 2 * MiB);
    same = true;
    for (size_t i = 0; i < MiB; i++)
        same = same && s[i] == (unsigned char)(i * 7);
    CHECK(same);
    blocks_free(s);
    blocks_release();
}

static atomic_int churning = 1; /* atomic: read by the churning thread */

static void *churn(void *arg)
{
    (void)arg;
    while (atomic_load(&churning)) {
        void *b = blocks_alloc(BLOCKS_FROM);
        if (b)
            blocks_free(b);
    }
    return NULL;
}

/* A fork while another thread keeps and takes blocks: the child can make and
 * free blocks (the lock on what is kept is not left held in it). */
static void test_a_child_forked_mid_use_can_use_blocks(void)
{
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, churn, NULL) == 0);
    int stuck = 0;
    for (int i = 0; i < 200 && !stuck; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(2);
            void *b = blocks_alloc(2 * MiB);
            blocks_free(b);
            blocks_release();
            _exit(b ? 0 : 1);
        }
        int status = 0;
        REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            stuck = i + 1;
    }
    atomic_store(&churning, 0);
    pthread_join(t, NULL);
    CHECK_INT(stuck, 0);
    blocks_release();
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_block_is_told_from_glibcs),
    TESTING_CASE(test_a_freed_block_is_reused_by_one_of_about_its_size),
    TESTING_CASE(test_what_is_kept_is_bounded_and_the_larger_stay),
    TESTING_CASE(test_resizing_keeps_the_content),
    TESTING_CASE_TIMEOUT(test_a_child_forked_mid_use_can_use_blocks, 60),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
