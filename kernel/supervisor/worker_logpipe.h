/* worker_logpipe: the read end of a worker's fd 2, relayed line by line to the
 * kernel's log (worker_log.h) from the supervisor's loop. */
#ifndef SANDPIT_WORKER_LOGPIPE_H
#define SANDPIT_WORKER_LOGPIPE_H

#include <stddef.h>

struct loop;

/* The read end of a worker's fd 2, relayed line by line to the kernel's log. */
struct logpipe {
    struct loop *loop;
    int fd; /* -1 when none */
    long long event;
    char buf[1024];
    size_t len;
};

/* Starts relaying a log pipe (fd: non-blocking, now the logpipe's). */
void worker_logpipe_open(struct logpipe *lp, struct loop *loop, int fd);
/* Stops relaying it and closes its fd; nothing when it has none. */
void worker_logpipe_close(struct logpipe *lp);
/* The log of src becomes dst's (dst's own, if any, is closed). */
void worker_logpipe_move(struct logpipe *dst, struct logpipe *src);

#endif
