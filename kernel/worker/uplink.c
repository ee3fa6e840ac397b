/* uplink: fd 3, shared by the worker's threads.
 *
 * One mutex per direction: a thread that sends a large chart must not hold up
 * the reader, and two senders must not interleave their frames. Waiting for
 * input is a poll with a bounded wait, so that a cell closing fd 3 under it is
 * noticed (poll holds the socket open and would never return). */
#include "kernel/worker/uplink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/log.h"

static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recv_mu = PTHREAD_MUTEX_INITIALIZER;
static struct link_reader reader;
static size_t frame_limit = LINK_MAX_FRAME;

/* The link is the worker's only reason to exist: when it breaks (the
 * supervisor has gone, or a cell closed or replaced fd 3), the worker ends at
 * once. */
static _Noreturn void link_lost(int err)
{
    log_info("the link to the supervisor is gone (%s); the worker exits",
             err ? strerror(err) : "closed");
    _exit(err ? 70 : 0);
}

void uplink_init(void)
{
    fcntl(UPLINK_FD, F_SETFD, FD_CLOEXEC);
    link_reader_init(&reader);
}

void uplink_set_frame_limit(size_t max)
{
    frame_limit = max ? max : LINK_MAX_FRAME;
}

size_t uplink_frame_limit(void)
{
    return frame_limit;
}

int uplink_send(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers)
{
    /* Refused here, with nothing sent, rather than sent and the worker ended by the
     * supervisor for it: the code that made it gets an exception it can read. */
    size_t body = 4 + json_len;
    for (size_t i = 0; i < nbuffers; i++)
        body += 4 + buffers[i].len;
    if (body > frame_limit)
        return -EMSGSIZE;
    unsigned char *frame;
    size_t len;
    int rc = link_encode(json, json_len, buffers, nbuffers, &frame, &len);
    if (rc)
        return rc;
    pthread_mutex_lock(&send_mu);
    rc = link_write_all(UPLINK_FD, frame, len);
    pthread_mutex_unlock(&send_mu);
    free(frame);
    if (rc == -EBADF || rc == -EPIPE || rc == -ECONNRESET || rc == -ENOTSOCK)
        link_lost(-rc);
    return rc;
}

int uplink_send_frame(const json_t *frame)
{
    char *text = link_encode_text(frame);
    if (!text)
        return -ENOMEM;
    int rc = uplink_send(text, strlen(text), NULL, 0);
    free(text);
    return rc;
}

int uplink_recv(struct link_frame *out, bool block)
{
    pthread_mutex_lock(&recv_mu);
    int rc;
    for (;;) {
        rc = link_reader_next(&reader, out);
        if (rc != 0)
            break;
        struct pollfd pfd = {.fd = UPLINK_FD, .events = POLLIN};
        int n = poll(&pfd, 1, block ? 1000 : 0);
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) {
            if (fcntl(UPLINK_FD, F_GETFD) < 0)
                link_lost(EBADF);
            if (!block) {
                rc = 0;
                break;
            }
            continue;
        }
        if (pfd.revents & POLLNVAL)
            link_lost(EBADF);
        ssize_t got = link_reader_fill(&reader, UPLINK_FD);
        if (got == 0)
            link_lost(0);
        if (got < 0 && got != -EAGAIN && got != -EINTR)
            link_lost((int)-got);
        if (got == -EINTR) {
            rc = -EINTR;
            break;
        }
    }
    pthread_mutex_unlock(&recv_mu);
    return rc;
}
