/* loop: the supervisor's event loop, in the manner of Redis's ae.c.
 * It owns its registrations and nothing else: ZeroMQ sockets and file
 * descriptors to watch (file events), deadlines (time events) and one hook
 * that runs before each wait. The loop calls the handlers; a handler reaches
 * back only through the functions below. The clock is given to loop_new, so a
 * test can move time by hand. The data given with a registration is borrowed
 * until the registration is removed. */
#ifndef SANDPIT_LOOP_H
#define SANDPIT_LOOP_H

#include <stdbool.h>

#define LOOP_READABLE 1
#define LOOP_WRITABLE 2
/* What a time event's handler returns to be removed rather than repeated. */
#define LOOP_NOMORE (-1.0)

/* The order in which one turn handles the supervisor's file events: signals,
 * the worker's log, the control channel (an interrupt or a shutdown must not
 * wait behind the shell), the worker's link (a running cell's output is not
 * held back by a burst of requests), then the other channels. */
enum loop_rank {
    LOOP_RANK_SIGNALS,
    LOOP_RANK_WORKER_LOG,
    LOOP_RANK_CONTROL,
    LOOP_RANK_WORKER_LINK,
    LOOP_RANK_CHANNELS,
};

struct loop;

/* A file event: events says what the socket or descriptor is ready for
 * (LOOP_READABLE also when it is in error, so that a read finds out). */
typedef void loop_file_fn(struct loop *l, long long id, int events, void *data);
/* A time event: returns the seconds after which it is due again, or
 * LOOP_NOMORE. */
typedef double loop_time_fn(struct loop *l, long long id, void *data);
typedef void loop_hook_fn(struct loop *l, void *data);
typedef double loop_clock_fn(void);

/* A new loop reading time from clock (NULL: monotime_now). NULL when out of
 * memory. loop_free accepts NULL. */
struct loop *loop_new(loop_clock_fn *clock);
void loop_free(struct loop *l);

/* Watches a ZeroMQ socket for messages (the socket is borrowed). Within one
 * turn, events of a lower rank are handled first. Returns the registration's
 * id (> 0) or -errno. */
long long loop_add_socket(struct loop *l, void *socket, int rank, loop_file_fn *fn,
                          void *data);
/* Says that the owner sent on, or read from, socket outside its handler: it is
 * asked for its events before the loop next waits (ZeroMQ may have taken the
 * news of a message that arrived, so its descriptor will not tell). */
void loop_socket_used(struct loop *l, const void *socket);
/* Watches a descriptor for LOOP_READABLE and/or LOOP_WRITABLE. As above. */
long long loop_add_fd(struct loop *l, int fd, int events, int rank, loop_file_fn *fn,
                      void *data);
/* Changes what a file event waits for (e.g. LOOP_WRITABLE while a buffer is
 * pending). 0, or -ENOENT for an unknown id. */
int loop_set_events(struct loop *l, long long id, int events);
/* Removes a file event; its handler is not called again, even for an event
 * that arrived in the same turn. An unknown id is ignored. */
void loop_del_file(struct loop *l, long long id);

/* Calls fn after delay seconds of the loop's clock. Returns the id (> 0) or
 * -errno. */
long long loop_add_timer(struct loop *l, double delay, loop_time_fn *fn, void *data);
/* Removes a time event (also from inside its own handler). Unknown ids are
 * ignored. */
void loop_del_timer(struct loop *l, long long id);

/* The hook called at the start of every turn, before the loop waits (ae's
 * beforesleep). One per loop; fn NULL removes it. */
void loop_set_before_wait(struct loop *l, loop_hook_fn *fn, void *data);

/* The loop's clock, now. */
double loop_now(const struct loop *l);

/* One turn: the hook, a wait of at most max_wait_ms (-1: until the next
 * event or deadline) for the file events, their handlers in rank order, then
 * every time event that is due. 0, or -errno when waiting failed. */
int loop_turn(struct loop *l, int max_wait_ms);

/* Turns until loop_stop. 0, or -errno when waiting failed. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
bool loop_stopped(const struct loop *l);

#endif
