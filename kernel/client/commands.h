/* commands: the client commands of the sandpit binary (start, stop, status,
 * run, mcp), dispatched from main.c by name. The kernel and the worker do not
 * link against any of them at run time: they are other processes' jobs that
 * happen to live in the same binary. */
#ifndef SANDPIT_COMMANDS_H
#define SANDPIT_COMMANDS_H

/* Runs the command cmd with argv (argv[0] is cmd) and returns its exit
 * status, or -1 when cmd is not a client command. version is sandpit's
 * (borrowed), for what the commands report about themselves. */
int commands_main(const char *cmd, int argc, char **argv, const char *version);

#endif
