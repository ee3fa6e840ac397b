/* shells: the main shell and the subshells (JEP 91), each a queue of requests
 * for the worker with at most one of them running, and the begin and end of
 * every request, which publish its status busy and idle (there alone, once
 * each). A request is submitted, waits its turn, begins (busy, then
 * execute_input, after the request is on the link), then ends one way: the
 * worker's reply (shells_finish), the worker's loss (shells_worker_lost), an
 * abort, or its subshell's deletion. A request the supervisor answers itself
 * begins and ends around its handler; a refused one around its error reply.
 * The shells own their requests. */
#ifndef SANDPIT_SHELLS_H
#define SANDPIT_SHELLS_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/supervisor/kernel.h"

void shells_init(struct kernel *k);
/* Frees every request, queued or running, without answering. */
void shells_release(struct kernel *k);

/* The shell with this id ("" is the main shell), or NULL. */
struct shell *shells_find(struct kernel *k, const char *id);

/* Queues *req (taken over; *req is NULL afterwards) in the shell that its
 * header's subshell_id names (control requests jump the queue), and starts it
 * if it can. A request for an unknown subshell is answered at once with an
 * error; an execute_request that cannot run (no code, a bad time limit in its
 * metadata) gets its error reply when its turn comes. */
void shells_submit(struct kernel *k, struct request **req);

/* Answers *req (taken over) with its own handler (req->answer), between busy
 * and idle. */
void shells_answer(struct kernel *k, struct request **req);

/* Answers *req (taken over), a request due a reply, at once with an error reply
 * (ename, why), between busy and idle. */
void shells_refuse(struct kernel *k, struct request **req, const char *ename,
                   const char *why);

/* A request whose handler kept it (req->deferred) has had its reply: its
 * idle, and its shell's queue moves on. Frees req. */
void shells_answered(struct kernel *k, struct request *req);

/* Starts the first waiting request of every idle shell: a request the
 * supervisor answers itself at once, one for the worker if the worker is
 * ready; answers them with an error if the worker keeps failing to start. */
void shells_pump(struct kernel *k);

/* The worker's reply to the request running in sh: the reply (with the
 * supervisor's own fields), idle, and under stop_on_error the abort of the
 * execute requests waiting in sh. content and metadata are borrowed. */
void shells_finish(struct kernel *k, struct shell *sh, const json_t *content,
                   const json_t *metadata);

/* The worker went away: every running request is answered with why (an error
 * on iopub and in its reply: TimeoutError if it had reached its time limit,
 * else WorkerDied), and the subshells are deleted (their threads went with
 * the worker). */
void shells_worker_lost(struct kernel *k, const char *why);

/* Makes a subshell and tells the worker. NULL when there are
 * KERNEL_MAX_SHELLS already. */
struct shell *shells_create(struct kernel *k);
/* Deletes a subshell: waiting requests are aborted, a running one is answered
 * with why (SubshellDeleted), and the worker is told. */
void shells_delete(struct kernel *k, struct shell *sh, const char *why);

/* Answers the waiting requests of every shell with status aborted (restart). */
void shells_abort_all(struct kernel *k);

/* The running request with this msg_id, or NULL (borrowed). With id NULL, the
 * main shell's running request. */
struct request *shells_running(struct kernel *k, const char *id);
/* (Whether any request runs: kernel_any_running, kernel.h.) */

/* The header of a request the worker ran lately (running or ended), by msg_id;
 * borrowed, NULL if too old or unknown. */
json_t *shells_recent_header(struct kernel *k, const char *id);

#endif
