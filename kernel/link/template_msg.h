/* template_msg: what the supervisor and the worker template say to each other.
 * The template is a worker that has started Python and imported the runtime,
 * but is not confined and never runs a cell: it forks each new worker, which
 * then confines itself. Over a SOCK_SEQPACKET socketpair the supervisor sends a
 * request (the new worker's descriptors, passed with SCM_RIGHTS, and what the
 * supervisor made of its cgroup) and the template answers with the new
 * worker's pid; the template's first message says that it is ready. Messages
 * are fixed-size structs: both ends (sandpit and the worker) are built together.
 * Descriptors received are new (the receiver closes them). */
#ifndef SANDPIT_TEMPLATE_MSG_H
#define SANDPIT_TEMPLATE_MSG_H

#include <stddef.h>
#include <sys/types.h>

/* The argument that makes `sandpit-worker` the template rather than a worker:
 * the supervisor adds it to a worker's command line. */
#define SPAWN_TEMPLATE_FLAG "--as-template"

/* The descriptors of a request, in this order: the worker's end of the link,
 * the write end of its log, then up to three cgroup.procs files to join. */
#define SPAWN_FD_LINK  0
#define SPAWN_FD_LOG   1
#define SPAWN_FD_PROCS 2
#define SPAWN_MAX_FDS  5
#define SPAWN_NOTE_MAX 1024 /* what was made of the cgroup (SANDBOX_DETAIL_MAX) */

/* Sends a request: nfds descriptors (borrowed; 2 to SPAWN_MAX_FDS) and the
 * note (cut to SPAWN_NOTE_MAX - 1 bytes). 0 or -errno. */
int spawn_send_request(int sock, const int *fds, size_t nfds, const char *note);

/* Waits for a request. 1 with fds[0, *nfds) new descriptors and note filled,
 * 0 when the other end has closed, -EBADMSG for a message that is not a request
 * (its descriptors are closed), or -errno. */
int spawn_recv_request(int sock, int fds[SPAWN_MAX_FDS], size_t *nfds, char *note,
                       size_t notelen);

/* The template is ready: its first message, with its own pid. */
int spawn_send_ready(int sock);
/* The answer to a request: the new worker's pid, or 0 and a positive errno. */
int spawn_send_reply(int sock, pid_t pid, int err);

enum spawn_answer { SPAWN_READY = 1, SPAWN_REPLY = 2 };

/* Reads one answer without waiting: 1 with *kind, *pid and *err filled, 0 when
 * the other end has closed, -EAGAIN when nothing is there, -EBADMSG for a
 * message of another shape (any descriptors in it are closed), or -errno. */
int spawn_recv_answer(int sock, enum spawn_answer *kind, pid_t *pid, int *err);

#endif
