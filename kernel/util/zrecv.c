/* zrecv: read one multipart message from a ZeroMQ socket.
 *
 * The hard part is a message that is too large: ZeroMQ checks each frame as
 * it arrives (ZMQ_MAXMSGSIZE), but not the frames together, nor how many
 * there are. The rest of such a message is still read, part by part, and
 * dropped at once, so that the socket is left at the start of the next
 * message and nothing past the limit is held. */
#include "kernel/util/zrecv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

void zrecv_release(struct zrecv *r)
{
    zmq_msg_t *parts = r->parts;
    for (size_t i = 0; i < r->n; i++)
        zmq_msg_close(&parts[i]);
    free(r->parts);
    free(r->frames);
    memset(r, 0, sizeof *r);
}

int zrecv_read(void *socket, size_t max_bytes, struct zrecv *r)
{
    memset(r, 0, sizeof *r);
    zmq_msg_t *parts = NULL;
    size_t cap = 0, total = 0;
    int more = 1, rc = 0;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, socket, r->n || rc ? 0 : ZMQ_DONTWAIT) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (r->n == 0 && !rc && e == EAGAIN)
                return -EAGAIN;
            rc = rc ? rc : -e;
            break;
        }
        more = zmq_msg_more(&part);
        total += zmq_msg_size(&part);
        if (!rc && ((max_bytes && total > max_bytes) || r->n >= ZRECV_MAX_FRAMES))
            rc = -EMSGSIZE;
        if (!rc && r->n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            zmq_msg_t *np = realloc(parts, ncap * sizeof *np);
            if (np) {
                parts = np;
                r->parts = np;
                cap = ncap;
            } else {
                rc = -ENOMEM;
            }
        }
        if (rc) {
            zmq_msg_close(&part);
            continue;
        }
        zmq_msg_init(&parts[r->n]);
        zmq_msg_move(&parts[r->n], &part);
        zmq_msg_close(&part);
        r->n++;
    }
    if (!rc && !(r->frames = malloc(r->n * sizeof *r->frames)))
        rc = -ENOMEM;
    if (rc) {
        zrecv_release(r);
        return rc;
    }
    for (size_t i = 0; i < r->n; i++) {
        r->frames[i].data = zmq_msg_data(&parts[i]);
        r->frames[i].len = zmq_msg_size(&parts[i]);
    }
    return (int)r->n;
}
