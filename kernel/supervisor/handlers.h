/* handlers: the requests the supervisor answers itself, without the worker:
 * what must work while a cell runs (interrupt, shutdown, subshells) or needs
 * no Python (kernel_info, history). Each is called by dispatch between busy
 * and idle with a borrowed request, and sends its reply. */
#ifndef SANDPIT_HANDLERS_H
#define SANDPIT_HANDLERS_H

#include "kernel/link/frames.h"
#include "kernel/supervisor/kernel.h"

/* What a history_reply to the worker may hold at most: its newest entries. */
#define HANDLERS_WORKER_HISTORY_ENTRIES 10000
#define HANDLERS_WORKER_HISTORY_BYTES   (4u << 20)

void handlers_kernel_info(struct kernel *k, struct request *req);
/* connect_request: the five ports of the connection file. */
void handlers_connect(struct kernel *k, struct request *req);
/* history_request: answered from the history's query thread (history.h's
 * history_submit) once its answer is collected; the request is kept
 * (req->deferred) and its shell's queue waits for it. A query that is not one
 * is answered at once with an error. */
void handlers_history(struct kernel *k, struct request *req);
/* The worker's history frame (%history): its query is checked as a client's
 * would be, and answered with a history_reply (the history, bounded, or why
 * not) from the query thread; one at a time, and an answer for a worker that
 * has gone since (k->worker_generation) is dropped. f is borrowed. */
void handlers_worker_history(struct kernel *k, const struct link_history *f);
/* shutdown_request: the kernel ends (the loop stops), whatever restart says;
 * with restart true and metadata {"sandpit": {"in_place": true}}, the worker
 * is replaced instead and the history starts a new session. */
void handlers_shutdown(struct kernel *k, struct request *req);
void handlers_interrupt(struct kernel *k, struct request *req);
void handlers_create_subshell(struct kernel *k, struct request *req);
void handlers_delete_subshell(struct kernel *k, struct request *req);
void handlers_list_subshell(struct kernel *k, struct request *req);

#endif
