/* supervisor: `sandpit kernel`, the process a Jupyter client starts. It binds
 * the connection file's sockets, runs the worker and serves until shutdown. */
#ifndef SANDPIT_SUPERVISOR_H
#define SANDPIT_SUPERVISOR_H

#include "kernel/cmd/launcher.h"
#include "kernel/options.h"

/* Runs the kernel until a shutdown request or SIGTERM; returns the exit status.
 * opts is borrowed (its workspace and tmpdir are filled in). gw, when the
 * kernel was started by Enterprise Gateway (else NULL), is borrowed: once the
 * ports are bound the kernel reports to the gateway and serves its
 * communication port (the listener is taken from gw). */
int supervisor_run(struct options *opts, struct launcher *gw);

#endif
