/* lifecycle: `sandpit start`, `sandpit stop` and `sandpit status`, the
 * commands that keep a persistent sandboxed kernel in the background for a
 * workspace, for agents and scripts that send it cells with `sandpit run`.
 * Each returns the process's exit status. */
#ifndef SANDPIT_LIFECYCLE_H
#define SANDPIT_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/options.h"

/* argv[0] is the subcommand. */
int lifecycle_start_main(int argc, char **argv);
int lifecycle_stop_main(int argc, char **argv);
int lifecycle_status_main(int argc, char **argv);

/* Parses and checks kernel options as `start` and `mcp` take them, with
 * --profile default|agent among them (a profile sets defaults: the options
 * given explicitly win wherever they stand, as for `sandpit install`). -f is
 * refused: these commands write their own connection file. argv[0] is the
 * subcommand, cmd its name in errors ("sandpit start"); argv is reordered (the
 * flags of this layer taken out). 0, FLAGS_HELP after --help (the caller prints
 * its usage), or -EINVAL with a sentence in err. */
int lifecycle_parse_kernel_options(struct options *o, const char *cmd, int argc,
                                   char **argv, char *err, size_t errlen);

/* This program's path, then words, then the kernel options o (without their
 * workspace and connection file, which words give). New NULL-terminated array
 * of new strings, or NULL when out of memory or the program's path is not
 * known. */
char **lifecycle_command_argv(const struct options *o, const char *const *words,
                              size_t nwords);

/* The command line that starts `sandpit kernel` for a connection file and a
 * workspace (absolute) with the options o. New NULL-terminated array of new
 * strings, or NULL when out of memory. */
char **lifecycle_kernel_argv(const struct options *o, const char *connection_file,
                             const char *workspace);

#endif
