/* worker_logpipe: the worker's fd 2, relayed line by line to the kernel's log.
 *
 * The pipe is read from the loop, a bounded number of reads per event; whole
 * lines (or a full buffer) go to worker_log.c, which replaces control
 * characters and counts them against the kernel's limit. A spare worker's pipe
 * is opened as it starts and moved to the running worker's when it takes over,
 * with what it has buffered. */
#include "kernel/supervisor/worker_logpipe.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/worker_log.h"

#define READ_TURNS 64 /* reads of the pipe per event, so a flood cannot hold the loop */

void worker_logpipe_close(struct logpipe *lp)
{
    if (lp->fd < 0)
        return;
    loop_del_file(lp->loop, lp->event);
    close(lp->fd);
    lp->fd = -1;
    lp->event = 0;
    lp->len = 0;
}

/* The log pipe is readable: its whole lines go to the kernel's log, marked as
 * the worker's, with control characters removed and within the kernel's limit
 * (worker_log.h): code in the worker can write there before cells run (a
 * preload) and, where the pipe is not yet closed, a cell. */
static void on_log(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    (void)events;
    struct logpipe *lp = data;
    /* A bounded number of reads per event: a writer as fast as this loop must
     * not hold it (the rest waits for the next turn). */
    for (int turn = 0; turn < READ_TURNS; turn++) {
        ssize_t n = read(lp->fd, lp->buf + lp->len, sizeof lp->buf - lp->len);
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EINTR))
                worker_logpipe_close(lp);
            return;
        }
        lp->len += (size_t)n;
        /* Whole lines, or a full buffer, go to the log, within its limit. */
        for (;;) {
            char *nl = memchr(lp->buf, '\n', lp->len);
            size_t len = nl ? (size_t)(nl - lp->buf) : lp->len;
            if (!nl && lp->len < sizeof lp->buf)
                break;
            worker_log_line(lp->buf, len);
            size_t used = nl ? len + 1 : len;
            memmove(lp->buf, lp->buf + used, lp->len - used);
            lp->len -= used;
        }
    }
}

void worker_logpipe_open(struct logpipe *lp, struct loop *loop, int fd)
{
    lp->loop = loop;
    lp->fd = fd;
    lp->len = 0;
    long long id = loop_add_fd(loop, fd, LOOP_READABLE, LOOP_RANK_WORKER_LOG, on_log, lp);
    lp->event = id > 0 ? id : 0;
}

void worker_logpipe_move(struct logpipe *dst, struct logpipe *src)
{
    worker_logpipe_close(dst);
    if (src->fd < 0)
        return;
    loop_del_file(src->loop, src->event);
    size_t len = src->len;
    memcpy(dst->buf, src->buf, len);
    worker_logpipe_open(dst, src->loop, src->fd);
    dst->len = len;
    src->fd = -1;
    src->event = 0;
    src->len = 0;
}
