/* run_args: the command line of `sandpit run` (kernel/client/run.c), read with
 * the one table parser (kernel/util/flags.h). The strings are borrowed from
 * argv. */
#ifndef SANDPIT_RUN_ARGS_H
#define SANDPIT_RUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#define RUN_DEFAULT_MAX_CHARS 20000

struct run_args {
    const char *connection_file;
    const char *workspace;
    const char *code;
    const char *code_file;
    const char *outdir;
    double timeout_s;
    size_t max_chars;
    bool json, interrupt, restart;
};

/* Reads argv (argv[0] is the subcommand) into a, and checks that its parts go
 * together. 0, 1 after --help (the usage printed), or -EINVAL (said on
 * stderr). */
int run_args_parse(struct run_args *a, int argc, char **argv);

#endif
