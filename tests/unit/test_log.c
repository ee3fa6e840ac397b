/* log: one line each, and the limits on what the worker or a client without
 * the key can make the kernel log (struct log_limit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "testing.h"

/* What was logged to f since it was opened (new, caller frees). */
static char *logged(FILE *f)
{
    long n = ftell(f);
    char *text = calloc(1, (size_t)n + 1);
    if (text && n > 0 && pread(fileno(f), text, (size_t)n, 0) != n)
        text[0] = 0;
    return text;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void test_a_message_is_one_line(void)
{
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    log_init("kernel", LOG_WARN, fileno(f));
    log_warn("a kind: %s", "x\n[sandpit kernel 00:00:00.000 error] forged\x1b[2J");
    fseek(f, 0, SEEK_END);
    char *text = logged(f);
    REQUIRE(text != NULL);
    CHECK_INT(count(text, "\n"), 1);
    CHECK(strstr(text, "a kind: x?[sandpit kernel 00:00:00.000 error] forged?[2J\n"));
    free(text);
    fclose(f);
}

static void test_a_limit_drops_past_its_burst_and_says_so(void)
{
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    log_init("kernel", LOG_WARN, fileno(f));
    struct log_limit l = {.what = "lines from a test", .burst_lines = 3};
    for (int i = 0; i < 1000; i++)
        log_limited(&l, LOG_WARN, "line %d", i);
    fseek(f, 0, SEEK_END);
    char *text = logged(f);
    REQUIRE(text != NULL);
    CHECK_INT(count(text, "] line "), 3);
    CHECK_INT(count(text, "lines from a test are coming faster"), 1);
    CHECK_INT(l.dropped_lines, 997);
    /* When lines pass again, one line says how many did not. */
    l.lines = 1;
    log_limited(&l, LOG_WARN, "line again");
    fseek(f, 0, SEEK_END);
    free(text);
    text = logged(f);
    REQUIRE(text != NULL);
    CHECK(strstr(text, "997 lines from a test ("));
    CHECK(strstr(text, "] line again"));
    CHECK_INT(l.dropped_lines, 0);
    /* At the end, one line says how many of the last were dropped. */
    l.lines = 0;
    log_limited(&l, LOG_WARN, "line at the end");
    log_limited(&l, LOG_WARN, "line at the end");
    log_limits_flush();
    fseek(f, 0, SEEK_END);
    free(text);
    text = logged(f);
    REQUIRE(text != NULL);
    CHECK(strstr(text, "2 lines from a test ("));
    CHECK_INT(count(text, "line at the end"), 0);
    free(text);
    fclose(f);
}

static void test_a_limit_in_bytes_and_in_all(void)
{
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    log_init("kernel", LOG_WARN, fileno(f));
    struct log_limit l = {
        .what = "test lines", .burst_lines = 1e9, .burst_bytes = 100, .max_bytes = 1000};
    CHECK(log_limit_take(&l, 60));
    CHECK(!log_limit_take(&l, 60)); /* 40 bytes left in the bucket */
    l.bytes = 100;
    int passed = 0;
    for (int i = 0; i < 100; i++) {
        l.bytes = 100; /* as if time had passed */
        passed += log_limit_take(&l, 60);
    }
    CHECK_INT(passed, 15); /* 16 lines of 60 bytes fit in 1000 */
    CHECK(l.over);
    fseek(f, 0, SEEK_END);
    char *text = logged(f);
    REQUIRE(text != NULL);
    CHECK_INT(count(text, "have reached this kernel's limit of 1000 bytes"), 1);
    free(text);
    fclose(f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_message_is_one_line),
    TESTING_CASE(test_a_limit_drops_past_its_burst_and_says_so),
    TESTING_CASE(test_a_limit_in_bytes_and_in_all),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
