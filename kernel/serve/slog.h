/* slog: the server's log lines, as text (kernel/util/log.h's form) or, with
 * --log-format json, one JSON object a line: time (UTC, ISO 8601), level,
 * message, and the kernel id and user when the line is about a kernel. A
 * line about a kernel is logged between slog_kernel(id, user) and
 * slog_kernel(NULL, NULL). The token is never given to it. */
#ifndef SANDPIT_SERVE_SLOG_H
#define SANDPIT_SERVE_SLOG_H

#include <stdbool.h>

#include "kernel/util/log.h"

/* Starts the server's log on stderr, at level, as JSON when json. */
void slog_init(enum log_level level, bool json);

/* The kernel (and its user, may be "" or NULL) that the next lines are
 * about; NULL: none. */
void slog_kernel(const char *id, const char *user);

#endif
