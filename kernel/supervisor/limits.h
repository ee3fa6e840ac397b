/* limits: what the supervisor enforces on a running request, out of the
 * code's reach: its time limit, the escalation of an interrupt that is not
 * obeyed to a restart of the worker, and its output cap. Each request carries
 * its own limit, timers and counts; the timers are time events of the kernel's
 * loop, so a test can drive them with a clock of its own. */
#ifndef SANDPIT_LIMITS_H
#define SANDPIT_LIMITS_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/supervisor/kernel.h"

/* After an interrupt, how long a cell has to stop before its worker is
 * restarted. */
#define LIMITS_INTERRUPT_GRACE_S 5.0

/* Sets r's time limit: the kernel's --timeout, tightened (never loosened) by
 * the request's metadata {"sandpit": {"timeout": S}}. */
void limits_set_timeout(struct kernel *k, struct request *r);

/* r has gone to the worker: from now its time limit runs. */
void limits_start(struct kernel *k, struct request *r);
/* r has ended: its time events are removed. */
void limits_stop(struct kernel *k, struct request *r);

/* Interrupts every running request (SIGINT for the main shell's, a note on
 * the link for a subshell's) and arms the escalation of each. reason is for
 * the log. */
void limits_interrupt_all(struct kernel *k, const char *reason);

/* Counts output for r against the kernel's --max-output. Returns false when
 * the message must be dropped; a stream that crosses the cap is cut at it (on
 * a character boundary) in content. r may be NULL (output of no running
 * request: not counted). */
bool limits_output(struct kernel *k, struct request *r, const char *msg_type,
                   json_t *content);

/* At the end of r: publishes one line on stderr saying how much output was
 * dropped past the cap, counting worker_dropped (what the worker's pump dropped
 * before the link) with the supervisor's own count. Nothing if none was. */
void limits_report_dropped(struct kernel *k, struct request *r,
                           unsigned long worker_dropped);

#endif
