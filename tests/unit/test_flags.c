/* Unit tests of flags, the one parser of the commands' lines: values after a
 * space or '=', letters, switches, the positional argument, what another parser
 * is left, and the sentences for a missing value and an unknown flag. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/options.h"
#include "kernel/util/flags.h"
#include "testing.h"

struct args {
    bool json;
    const char *workspace, *file, *code;
    int calls;
    const char *last;
};

static int count(void *base, const struct flag *f, const char *v, char *err,
                 size_t errlen)
{
    struct args *a = base;
    (void)f;
    if (v && strcmp(v, "bad") == 0) {
        snprintf(err, errlen, "--count does not take bad");
        return -EINVAL;
    }
    a->calls++;
    a->last = v;
    return 0;
}

#define OFF(f) offsetof(struct args, f)

static const struct flag table[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "json", .kind = FLAG_SWITCH, .offset = OFF(json), .help = "one object"},
    {.name = "workspace",
     .kind = FLAG_TEXT,
     .needs = "a folder",
     .offset = OFF(workspace),
     .metavar = "DIR",
     .help = "the folder\nof the kernel"},
    {.name = "file",
     .letter = 'f',
     .kind = FLAG_TEXT,
     .needs = "a file",
     .offset = OFF(file)},
    {.name = "count", .kind = FLAG_CALL, .needs = "a number", .call = count},
    {.name = NULL, .kind = FLAG_TEXT, .offset = OFF(code)},
};

static const struct flags fl = FLAGS_OF("sandpit test", table, false);

/* Parses the words of line (at most 15) into *a; returns flags_parse's. */
static int parse(const struct flags *f, struct args *a, char *line, int *argc,
                 char **argv, char *err)
{
    int n = 0;
    memset(a, 0, sizeof *a);
    argv[n++] = "test";
    char *save = NULL;
    for (char *w = strtok_r(line, " ", &save); w && n < 15;
         w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n] = NULL;
    *argc = n;
    err[0] = 0;
    return flags_parse(f, a, argc, argv, err, 256);
}

static void test_values_switches_and_letters(void)
{
    struct args a;
    char line[] = "--json --workspace w -f x.py --count=3 print(1)", err[256], *argv[16];
    int argc;
    CHECK_INT(parse(&fl, &a, line, &argc, argv, err), 0);
    CHECK(a.json);
    CHECK_STR(a.workspace, "w");
    CHECK_STR(a.file, "x.py");
    CHECK_INT(a.calls, 1);
    CHECK_STR(a.last, "3");
    CHECK_STR(a.code, "print(1)");
    char again[] = "--workspace=a=b --file=- -";
    CHECK_INT(parse(&fl, &a, again, &argc, argv, err), 0);
    CHECK_STR(a.workspace, "a=b");
    CHECK_STR(a.file, "-");
    CHECK_STR(a.code, "-"); /* a lone dash is an argument, not a flag */
}

static void test_a_missing_value(void)
{
    struct args a;
    char line[] = "--json --workspace", err[256], *argv[16];
    int argc;
    CHECK_INT(parse(&fl, &a, line, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "--workspace needs a folder (see sandpit test --help)");
    char letter[] = "-f", eq[] = "--json=1";
    CHECK_INT(parse(&fl, &a, letter, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "-f needs a file (see sandpit test --help)");
    CHECK_INT(parse(&fl, &a, eq, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "--json takes no value (see sandpit test --help)");
}

static void test_an_unknown_flag_and_a_second_argument(void)
{
    struct args a;
    char line[] = "--bogus 1", err[256], *argv[16];
    int argc;
    CHECK_INT(parse(&fl, &a, line, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "unexpected argument \"--bogus\", an unknown option (see sandpit test "
                   "--help)");
    char letter[] = "-x", two[] = "a b", prefix[] = "--work x";
    CHECK_INT(parse(&fl, &a, letter, &argc, argv, err), -EINVAL);
    CHECK(strstr(err, "\"-x\", an unknown option") != NULL);
    CHECK_INT(parse(&fl, &a, two, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "unexpected argument \"b\" (see sandpit test --help)");
    CHECK_INT(parse(&fl, &a, prefix, &argc, argv, err), -EINVAL); /* no abbreviations */
    CHECK(strstr(err, "unknown option") != NULL);
    struct flags no_positional = fl;
    no_positional.n--; /* the table without its positional entry */
    char one[] = "a";
    CHECK_INT(parse(&no_positional, &a, one, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "unexpected argument \"a\" (see sandpit test --help)");
}

static void test_help_and_a_call_s_error(void)
{
    struct args a;
    char line[] = "--json -h --bogus", err[256], *argv[16];
    int argc;
    CHECK_INT(parse(&fl, &a, line, &argc, argv, err), FLAGS_HELP);
    char bad[] = "--count bad";
    CHECK_INT(parse(&fl, &a, bad, &argc, argv, err), -EINVAL);
    CHECK_STR(err, "--count does not take bad");
    CHECK_INT(a.calls, 0);
}

static void test_what_another_parser_is_left(void)
{
    struct flags keep = FLAGS_OF("sandpit test", table, true);
    keep.n--; /* no positional entry: arguments are kept */
    struct args a;
    char line[] = "--timeout 5 --json x --read=/r --workspace w -q", err[256], *argv[16];
    int argc;
    CHECK_INT(parse(&keep, &a, line, &argc, argv, err), 0);
    CHECK(a.json);
    CHECK_STR(a.workspace, "w");
    REQUIRE(argc == 6);
    CHECK_STR(argv[0], "test");
    CHECK_STR(argv[1], "--timeout");
    CHECK_STR(argv[2], "5");
    CHECK_STR(argv[3], "x");
    CHECK_STR(argv[4], "--read=/r");
    CHECK_STR(argv[5], "-q");
    CHECK(argv[6] == NULL);
    char missing[] = "--timeout 5 --workspace";
    CHECK_INT(parse(&keep, &a, missing, &argc, argv, err), -EINVAL); /* still a table's */
    CHECK_STR(err, "--workspace needs a folder (see sandpit test --help)");
}

static void test_the_help_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f != NULL);
    flags_usage(f, &fl, 16);
    fclose(f);
    CHECK_STR(text, "  --json           one object\n"
                    "  --workspace DIR  the folder\n"
                    "                   of the kernel\n");
    free(text);
}

/* The kernel's options go through the same parser, with the same sentences. */
static void test_the_kernel_options_say_it_the_same_way(void)
{
    struct options o;
    char err[256];
    char *missing[] = {"kernel", "--timeout", NULL};
    char *unknown[] = {"kernel", "--bogus", "1", NULL};
    char *conn[] = {"kernel", "-f", NULL};
    char *good[] = {"kernel", "-f", "c.json", "--timeout=2", "--read", "/a", NULL};
    options_init(&o);
    CHECK_INT(options_parse(&o, 2, missing, err, sizeof err), -EINVAL);
    CHECK_STR(err, "--timeout needs a value (see sandpit --help)");
    CHECK_INT(options_parse(&o, 3, unknown, err, sizeof err), -EINVAL);
    CHECK_STR(err, "unexpected argument \"--bogus\", an unknown option (see sandpit "
                   "--help)");
    CHECK_INT(options_parse(&o, 2, conn, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "-f needs the path of a connection file") != NULL);
    CHECK_INT(options_parse(&o, 6, good, err, sizeof err), 0);
    CHECK_STR(o.connection_file, "c.json");
    CHECK(o.timeout_s == 2);
    CHECK(o.read_dirs.n == 1 && strcmp(o.read_dirs.v[0], "/a") == 0);
    options_release(&o);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_values_switches_and_letters),
    TESTING_CASE(test_a_missing_value),
    TESTING_CASE(test_an_unknown_flag_and_a_second_argument),
    TESTING_CASE(test_help_and_a_call_s_error),
    TESTING_CASE(test_what_another_parser_is_left),
    TESTING_CASE(test_the_help_text),
    TESTING_CASE(test_the_kernel_options_say_it_the_same_way),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
