/* zwire: messages on the server's ZeroMQ sockets (zwire.h). */
#include "kernel/serve/zwire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define ZWIRE_MAX_FRAMES 1024 /* frames in one message; more is dropped */

bool zwire_readable(void *sock)
{
    int events = 0;
    size_t len = sizeof events;
    return zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN);
}

int zwire_fd(void *sock)
{
    int fd = -1;
    size_t len = sizeof fd;
    return zmq_getsockopt(sock, ZMQ_FD, &fd, &len) == 0 ? fd : -1;
}

static int keep_frame(struct wire_frame **f, size_t *n, zmq_msg_t *part)
{
    struct wire_frame *nf = realloc(*f, (*n + 1) * sizeof *nf);
    if (!nf)
        return -ENOMEM;
    *f = nf;
    size_t len = zmq_msg_size(part);
    void *data = malloc(len ? len : 1);
    if (!data)
        return -ENOMEM;
    memcpy(data, zmq_msg_data(part), len);
    nf[*n].data = data;
    nf[(*n)++].len = len;
    return 0;
}

int zwire_recv(void *sock, struct sign *s, struct msg **out, size_t *bytes)
{
    *out = NULL;
    size_t total = 0;
    struct wire_frame *f = NULL;
    size_t n = 0;
    int more = 1, rc = 0;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, ZMQ_DONTWAIT) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (n == 0 && rc == 0) {
                wire_frames_free(f, n);
                return -e;
            }
            rc = rc ? rc : -EBADMSG;
            break;
        }
        more = zmq_msg_more(&part);
        total += zmq_msg_size(&part);
        if (rc == 0)
            rc = n < ZWIRE_MAX_FRAMES ? keep_frame(&f, &n, &part) : -EBADMSG;
        zmq_msg_close(&part);
    }
    if (rc == 0 && msg_parse_with(f, n, s, MSG_PARSE_LARGE, out, NULL, 0) != 0) {
        msg_free(*out);
        *out = NULL;
        rc = -EBADMSG;
    }
    wire_frames_free(f, n);
    if (bytes)
        *bytes = total;
    return rc;
}

int zwire_send(void *sock, const struct sign *s, const struct msg *m)
{
    struct wire_frame *frames;
    size_t n;
    int rc = msg_serialize(m, s, &frames, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (zmq_send(sock, frames[i].data, frames[i].len,
                     (i + 1 < n ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0) {
            rc = -errno;
            break;
        }
    wire_frames_free(frames, n);
    return rc;
}
