/* uplink: the worker's end of the link to the supervisor (fd 3), usable from
 * any of the worker's threads: the runtime's request loop and its reader
 * thread, the output pump, the subshells. When the link breaks, the worker
 * exits at once, so that the supervisor sees it die and answers the running
 * cell. Frames handed out own their memory; what is sent is borrowed. */
#ifndef SANDPIT_UPLINK_H
#define SANDPIT_UPLINK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/link/link.h"

#define UPLINK_FD 3

/* Takes the link over (fd 3, close-on-exec from now). Call once, first. */
void uplink_init(void);

/* fn is called (on the main thread) once the worker has waited a second
 * between cells with nothing to do, after each run of work: it gives back
 * memory kept for the next cell. The link's buffer and glibc's free memory
 * are given back then too. */
void uplink_on_idle(void (*fn)(void));

/* The largest frame the supervisor accepts from this worker (it ends a worker
 * that sends more; see link_worker_frame_limit). 0: LINK_MAX_FRAME. */
void uplink_set_frame_limit(size_t max);
size_t uplink_frame_limit(void);

/* Sends one frame (its JSON text and binary buffers, borrowed). Thread-safe;
 * blocks while the link is full. 0 or -errno: -EMSGSIZE, with nothing sent, for
 * a frame larger than the limit above. */
int uplink_send(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers);

/* Sends a frame object built by link/frames.h (borrowed). 0 or -errno. */
int uplink_send_frame(const json_t *frame);

/* Takes the next frame from the supervisor into *out (caller releases).
 * Thread-safe. With block false it returns at once. Returns 1 (a frame),
 * 0 (block false and nothing there), -EPIPE (the link is closed), -EINTR (a
 * signal arrived while waiting: the caller runs its handlers and may retry),
 * or -errno. Between the main shell's cells, the main thread reads with it. */
int uplink_recv(struct link_frame *out, bool block);

/* The reader thread's read: waits for its turn (a main-shell cell runs), then
 * for the next frame, as uplink_recv with block. Until it calls again, the
 * frame it returned counts as held: uplink_take_turn waits for it to be routed.
 * Returns 1 or -errno. */
int uplink_recv_in_turn(struct link_frame *out);

/* The main thread, before a cell: the reader thread reads until the cell ends. */
void uplink_give_turn(void);

/* The main thread, after a cell: takes the turn back, waking the reader thread
 * from its poll; returns once it holds no frame (it has routed what it read).
 * Blocks briefly: call it without holding Python's GIL. */
void uplink_take_turn(void);

#endif
