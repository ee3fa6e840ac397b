/* worker_log: the worker's lines in the kernel's log, within a limit.
 * The worker's log pipe (worker_logpipe.c) and its "log" frames on the link (route.c)
 * both end here. The user's code can write to either, so what comes is
 * hostile: its control characters are replaced, and its lines are counted
 * against one limit per kernel (per minute, in lines and bytes, and in all). */
#ifndef SANDPIT_WORKER_LOG_H
#define SANDPIT_WORKER_LOG_H

#include <stddef.h>

#define WORKER_LOG_LINE_MAX 1024 /* longer lines are cut */

/* Writes one line from the worker (len bytes, borrowed; no newline) to the
 * log, marked as the worker's, if the limit lets it. */
void worker_log_line(const char *text, size_t len);

#endif
