/* preexec: what every process the supervisor starts does first, between fork
 * (or vfork) and exec: the worker (worker_process.c) and the worker template
 * (worker_template.c). */
#ifndef SANDPIT_PREEXEC_H
#define SANDPIT_PREEXEC_H

#include <sys/types.h>

/* In the new process, before exec (parent: the supervisor's pid, taken before
 * the fork): signals as a new program expects them (none blocked, SIGPIPE and
 * SIGINT default), its own process group, and death with the supervisor. Ends
 * the process (WORKER_EXIT_EXEC, 127) if the supervisor is already gone. Only
 * async-signal-safe calls, on values already made: callable from a vforked child. */
void preexec_setup(pid_t parent);

#endif
