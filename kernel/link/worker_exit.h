/* worker_exit: the statuses a worker's process (and the worker template's)
 * ends with, named once for both ends: the worker returns them from its main
 * (kernel/worker/worker.c), and the supervisor names them when it reports a
 * worker's or the template's end (worker_lifecycle.c, worker_template.c).
 * The names are static strings. */
#ifndef SANDPIT_WORKER_EXIT_H
#define SANDPIT_WORKER_EXIT_H

#include <stdbool.h>
#include <stddef.h>

enum worker_exit {
    WORKER_EXIT_OK = 0,      /* its link closed: the supervisor has gone */
    WORKER_EXIT_FAILED = 1,  /* the runtime's loop, or the template's, failed (logged) */
    WORKER_EXIT_USAGE = 2,   /* a bad command line, or a workspace it cannot enter */
    WORKER_EXIT_SANDBOX = 3, /* it could not confine itself */
    WORKER_EXIT_PYTHON = 4,  /* Python or the runtime could not start */
    WORKER_EXIT_OUTPUT = 5,  /* its output could not be captured */
    WORKER_EXIT_EXEC = 127,  /* ended before exec: the supervisor gone, or exec failed */
};

/* The status's name ("WORKER_EXIT_SANDBOX"), or NULL for a status that is none
 * of these. */
const char *worker_exit_name(int status);

/* What the status says, as the end of a sentence that starts "the worker"
 * ("could not confine itself"), or NULL for a status that is none of these. */
const char *worker_exit_meaning(int status);

/* Writes into buf (len bytes) how a process that exited with status ended, as
 * the end of a sentence that starts "the worker": "exited with status 3
 * (WORKER_EXIT_SANDBOX: could not confine itself)" when the status is sandpit's
 * own (named is true: the template's, or a worker's before its hello, when no
 * cell has run), else "exited with status 3": a cell's os._exit(3) is not the
 * sandbox's failure. */
void worker_exit_describe(int status, bool named, char *buf, size_t len);

#endif
