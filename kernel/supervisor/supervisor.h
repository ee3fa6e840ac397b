/* supervisor: `sandpit kernel`, the process a Jupyter client starts. It binds
 * the connection file's sockets, runs the worker and serves until shutdown. */
#ifndef SANDPIT_SUPERVISOR_H
#define SANDPIT_SUPERVISOR_H

#include "kernel/options.h"

/* Runs the kernel until a shutdown request or SIGTERM; returns the exit status.
 * opts is borrowed (its workspace and tmpdir are filled in). */
int supervisor_run(struct options *opts);

#endif
