/* flags: the one parser of sandpit's command lines. Each command describes its
 * flags in a table (the name, whether it takes a value, where the value goes,
 * the help text) and flags_parse walks argv once against it, so that every
 * command says a wrong command line the same way. Values are borrowed from argv:
 * they live as long as it does. */
#ifndef SANDPIT_FLAGS_H
#define SANDPIT_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* flags_parse's return when --help (or -h) was given: the caller prints its usage. */
#define FLAGS_HELP 1

enum flag_kind {
    FLAG_SWITCH, /* takes no value: sets the bool at offset */
    FLAG_TEXT,   /* the const char * at offset points to the value (in argv) */
    FLAG_CALL,   /* call() checks the value and stores it */
    FLAG_HELP,   /* --help: flags_parse stops and returns FLAGS_HELP */
};

struct flag;

/* Stores value (NULL for a flag that takes none) into the struct at base; 0, or
 * -errno with a sentence in err ("--timeout needs a number, not \"x\""). */
typedef int flag_call_fn(void *base, const struct flag *f, const char *value, char *err,
                         size_t errlen);

struct flag {
    const char *name; /* the long name without "--"; NULL: the positional argument */
    char letter;      /* its short form ('f' for -f), or 0 */
    enum flag_kind kind;
    /* What its value is, said when it is missing ("a folder": "--prefix needs a
     * folder"); NULL: the flag takes no value. */
    const char *needs;
    size_t offset; /* where the value goes, from the base given to flags_parse */
    flag_call_fn *call;
    const void *data;    /* borrowed, for call */
    const char *metavar; /* the value's name in the help ("DIR") */
    const char *help;    /* NULL: not in the help; a '\n' starts an indented line */
};

struct flags {
    const char *cmd; /* "sandpit run": errors say "(see sandpit run --help)" */
    const struct flag *v;
    size_t n;
    /* Arguments that are not in the table (unknown flags and positional
     * arguments) are kept in argv, in their order, for another parser to read,
     * rather than refused. */
    bool keep_others;
};

#define FLAGS_OF(cmd, table, keep)                                                       \
    {                                                                                    \
        (cmd), (table), sizeof(table) / sizeof((table)[0]), (keep)                       \
    }

/* Parses argv[1..argc) (argv has argc + 1 entries, NULL-ended, as main's) against fl into
 * the struct at base: "--name value",
 * "--name=value", "-l value" (a letter), switches. With keep_others, what is
 * not in the table stays in argv (argv[0] first, NULL-ended) and *argc becomes
 * their count; otherwise an unknown flag or a positional argument the table has
 * no entry for is an error. Returns 0, FLAGS_HELP, or -EINVAL (-ENOMEM, or a
 * call's) with a sentence in err: "--prefix needs a folder (see sandpit
 * install --help)", "unexpected argument \"--bogus\", an unknown option (see
 * ...)", "unexpected argument \"x\" (see ...)", "--json takes no value". */
int flags_parse(const struct flags *fl, void *base, int *argc, char **argv, char *err,
                size_t errlen);

/* Prints the help of each flag that has one, as "  --name METAVAR  help", the
 * help at column width + 3 (continuation lines too). */
void flags_usage(FILE *f, const struct flags *fl, int width);

#endif
