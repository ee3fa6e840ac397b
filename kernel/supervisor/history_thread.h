/* history_thread: the history's query thread (history.h's history_submit),
 * and what history.c needs of it. Internal to the history module. */
#ifndef SANDPIT_HISTORY_THREAD_H
#define SANDPIT_HISTORY_THREAD_H

#include "kernel/supervisor/history.h"

/* For the loop's own use of db while queries hold it (a new session): stops
 * the queries asked so far (each is answered with an error that says so),
 * waits the few milliseconds the running one takes to stop, and collects. */
void history_thread_drain(struct history *h);
/* Stops and joins the thread; the answers not yet collected are dropped
 * (done with both NULL). Nothing if there is none. */
void history_thread_end(struct history *h);

#endif
