/* worker: `sandpit-worker`, the process that runs the user's code. Started by
 * the supervisor with the link on fd 3 (see supervisor/worker_process.h), it confines
 * itself (sandbox/), initialises CPython (pyrt), captures fds 1 and 2 (pump),
 * says hello and serves requests (uplink) until the link closes. */
#ifndef SANDPIT_WORKER_H
#define SANDPIT_WORKER_H

/* The worker's main() (kernel/worker_main.c); argv[0] is the program. Returns
 * the exit status (an enum worker_exit, kernel/link/worker_exit.h). */
int worker_main(int argc, char **argv);

#endif
