/* run: `sandpit run`, one cell sent to a running kernel from a shell or an
 * agent's tool call, its outcome printed as it arrives or as one JSON object.
 * Returns the process's exit status: 0 when the cell succeeded, 1 when it
 * failed, 2 when it could not be sent. */
#ifndef SANDPIT_RUN_H
#define SANDPIT_RUN_H

/* argv[0] is the subcommand. */
int run_main(int argc, char **argv);

#endif
