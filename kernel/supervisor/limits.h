/* limits: what the supervisor enforces on the worker, out of the code's reach:
 * the time limit of every request that runs user code (a cell's, a shorter one
 * for completion and inspection), the escalation of an interrupt that is not
 * obeyed (to a restart of the worker for a time limit's; to a line on stderr
 * for the user's, whose next interrupt restarts it), the output caps (text and images,
 * per request, and per kernel for output that comes after its request has ended), and the
 * CPU time the worker may use while none of its requests runs. Each request carries its
 * own limit, timers and counts; the timers are time events of the kernel's loop, so a
 * test can drive them with a clock of its own. */
#ifndef SANDPIT_LIMITS_H
#define SANDPIT_LIMITS_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/supervisor/kernel.h"

/* After an interrupt, how long a request has to stop before its worker is
 * restarted (its time limit's interrupt) or it is told that it has not (the
 * user's). */
#define LIMITS_INTERRUPT_GRACE_S 5.0
/* Output of no running request is capped per window of this many seconds. */
#define LIMITS_LATE_WINDOW_S 60.0
/* While no request runs, the worker's threads may use this much of one CPU on
 * average, and the cell time limit's worth of CPU seconds more in a burst. */
#define LIMITS_BACKGROUND_RATE 0.1

/* Sets r's time limit: by its kind, the kernel's --timeout (cells and comm
 * messages, which run the handlers that widgets registered) or
 * --introspection-timeout (completion, inspection, is_complete, comm_info),
 * tightened (never loosened) by the request's metadata
 * {"sandpit": {"timeout": S}}. */
void limits_set_timeout(struct kernel *k, struct request *r);

/* r has gone to the worker: from now its time limit runs, and the worker's CPU
 * time is the request's. */
void limits_start(struct kernel *k, struct request *r);
/* r has ended: its time events are removed; if no other request runs, the
 * worker's CPU time counts as background work from now. */
void limits_stop(struct kernel *k, struct request *r);

/* Interrupts every running request (SIGINT for the main shell's, a note on
 * the link for a subshell's) and arms the escalation of each; restarts the
 * worker instead when a running request was told that it had not stopped at an
 * earlier interrupt. reason is for the log. */
void limits_interrupt_all(struct kernel *k, const char *reason);

/* The worker's reply content for r, as its client is to get it (a new
 * reference; content is borrowed): content itself; for a cell, what of it
 * counts (a pager payload, a traceback, user expressions, an error's value)
 * against --max-output, cut when over (the payload, traceback and expressions
 * go); for a request other than a cell that its time limit interrupted and that
 * failed, a TimeoutError naming the limit. A comm message, which has no reply,
 * gets that error on iopub. *metadata (borrowed) is set to NULL when it is
 * larger than LIMITS_REPLY_METADATA bytes. */
#define LIMITS_REPLY_METADATA (16 << 10)
json_t *limits_reply(struct kernel *k, struct request *r, const json_t *content,
                     const json_t **metadata);

/* The rate of output messages from the worker, for the whole kernel: a burst of
 * LIMITS_BURST, then LIMITS_RATE a second (a progress bar redraws tens of times a
 * second, a widget's slider sends a few messages for each of its moves). */
#define LIMITS_RATE  500
#define LIMITS_BURST 2500

/* Counts an output message for r against the rate and the caps: its whole size
 * (content, *metadata, borrowed, and buffers bytes of binary buffers) against
 * --max-output, but the bytes of its images (MIME values that hold an image:
 * sizes_is_image), which count against the image budget. Returns false when the
 * message must be dropped. A stream that crosses the cap is cut at it (on a
 * character boundary) in content; images past their budget are taken out of
 * content, the rest of the display kept, and a display whose text is over keeps
 * its images alone; an error past the cap goes through once, cut to its name and
 * value (both of these without their message's metadata: *metadata is then
 * NULL). r NULL is output of no running request (a thread whose cell has ended, a
 * comm between cells, a parent the kernel never ran): counted against the same
 * caps per LIMITS_LATE_WINDOW_S for the whole kernel, with a notice parented to
 * parent (borrowed, may be NULL) the first time it is cut. Past the rate, the
 * request (or the window) is told once on stderr and the cell goes on. */
bool limits_output(struct kernel *k, struct request *r, const json_t *parent,
                   const char *msg_type, json_t *content, json_t **metadata,
                   size_t buffers);

/* At the end of r: publishes one line on stderr saying how much output was
 * dropped past each cap, counting worker_dropped (what the worker's pump dropped
 * before the link) with the supervisor's own count. Nothing if none was. */
void limits_report_dropped(struct kernel *k, struct request *r,
                           unsigned long worker_dropped);

/* A new worker has said hello: its background budget is full, and counts from
 * now (limits_background.c, as the two below). */
void limits_worker_ready(struct kernel *k);
/* No request runs: from now the worker's CPU time is background work (nothing
 * if one runs, or the worker is not ready). */
void limits_background_watch(struct kernel *k);
/* A request runs, or the worker is going: what it uses is not background work. */
void limits_background_unwatch(struct kernel *k);

/* Publishes text on stderr as output of r, a note from the kernel itself that
 * no cap counts. */
void limits_note(struct kernel *k, const struct request *r, const char *text);

#endif
