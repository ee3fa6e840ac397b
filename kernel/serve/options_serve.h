/* options_serve: `sandpit serve`'s command line. The server's own options
 * fill s->cfg and s->reg's limits; everything else is a kernel option
 * (kernel/options.h, --profile among them), given to every kernel the
 * server starts. The strings it keeps are owned by s (released by
 * serve_options_release). */
#ifndef SANDPIT_SERVE_OPTIONS_SERVE_H
#define SANDPIT_SERVE_OPTIONS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kernel/options.h"
#include "kernel/serve/server.h"

/* Parses argv (argv[0] is "serve"). 0; 1 when --help was answered; -EINVAL
 * (or -errno) with a sentence in err. *generated says that the token was
 * made here (and should be shown). */
int serve_options_parse(struct serve *s, struct options *kopts, int argc, char **argv,
                        bool *generated, char *err, size_t errlen);

void serve_options_release(struct serve *s);

void serve_usage(FILE *f);

#endif
