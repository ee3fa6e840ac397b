/* channels: ZeroMQ in and out.
 *
 * Nothing here waits: a socket is read with ZMQ_DONTWAIT until it is empty or
 * a batch is done (so one busy socket cannot starve the others), and every
 * send is ZMQ_DONTWAIT, so a slow client loses iopub messages at the
 * high-water mark rather than stalling the kernel. One malformed message must
 * not deafen a socket: whatever a message holds, the rest are read. */
#include "kernel/supervisor/channels.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/util/zrecv.h"

#define DRAIN_BATCH 256 /* messages read from one socket per event */
/* Messages ZeroMQ holds for the kernel from one peer before it stops reading
 * that peer's connection (the peer then waits: nothing is lost). ZeroMQ's 1000
 * let a client without the key park 1000 messages of --max-message each in
 * the supervisor; a client that waits for its replies has one or two queued. */
#define RECV_HWM    2
#define HB_MAX_PING 4096 /* clients send b"ping", a UUID or a time */
#define HB_SNDHWM   16
/* A subscription's topic: Jupyter's clients send "" (everything). */
#define IOPUB_MAX_TOPIC 1024
#define WELCOMES_BURST  32 /* iopub_welcome messages, then ... */
#define WELCOMES_PER_S  4  /* ... this many a second */
/* A frame this long is handed to ZeroMQ rather than copied (a chart's content). */
#define ZERO_COPY_FROM (64u << 10)

/* Anyone who can reach a port can send it messages, with or without the key:
 * what the kernel logs of the messages it refuses is limited, and so is what
 * it logs of its own that it could not send (a client that does not read). */
static struct log_limit refused_logged = {
    .what = "lines about messages refused",
    .lines_per_s = 1,
    .burst_lines = 20,
    .max_bytes = 1u << 20,
};
static struct log_limit sent_logged = {
    .what = "lines about messages not sent",
    .lines_per_s = 1,
    .burst_lines = 20,
    .max_bytes = 1u << 20,
};

static const int socket_types[CONNECTION_NCHANNELS] = {
    [CONNECTION_SHELL] = ZMQ_ROUTER, [CONNECTION_IOPUB] = ZMQ_XPUB,
    [CONNECTION_STDIN] = ZMQ_ROUTER, [CONNECTION_CONTROL] = ZMQ_ROUTER,
    [CONNECTION_HB] = ZMQ_ROUTER,
};

int channels_open(struct channels *c, const struct connection *conn, struct sign *sign,
                  size_t max_message)
{
    memset(c, 0, sizeof *c);
    c->sign = sign;
    c->max_message = max_message;
    c->zctx = zmq_ctx_new();
    if (!c->zctx)
        return -errno;
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        void *s = zmq_socket(c->zctx, socket_types[ch]);
        if (!s)
            return -errno;
        c->sockets[ch] = s;
        int linger = 1000, one = 1, rcvhwm = RECV_HWM;
        /* ZeroMQ checks each frame as it arrives, and drops the peer of one that is
         * too large before it is read; zrecv_read checks the frames together. */
        int64_t maxmsg = max_message ? (int64_t)max_message : -1;
        /* The heartbeat echoes what comes, to anyone: it takes pings only, and
         * keeps few echoes for a peer that does not read them (ZeroMQ's 1000
         * of --max-message each made it hold gigabytes for one such peer). */
        int hb_sndhwm = HB_SNDHWM;
        if (ch == CONNECTION_HB) {
            maxmsg = HB_MAX_PING;
            zmq_setsockopt(s, ZMQ_SNDHWM, &hb_sndhwm, sizeof hb_sndhwm);
        }
        if (ch == CONNECTION_IOPUB)
            maxmsg = IOPUB_MAX_TOPIC;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
        zmq_setsockopt(s, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
        if (strchr(conn->ip, ':'))
            zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one);
        /* Every subscription comes up, so each gets a welcome; and the kernel
         * makes them itself (take): ZeroMQ would keep each topic a peer sends,
         * without a key and without a bound. */
        if (ch == CONNECTION_IOPUB) {
            zmq_setsockopt(s, ZMQ_XPUB_VERBOSE, &one, sizeof one);
            zmq_setsockopt(s, ZMQ_XPUB_MANUAL, &one, sizeof one);
        }
        char ep[PATH_MAX + 32];
        if (connection_endpoint(conn, ch, ep, sizeof ep) < 0) {
            log_error("the %s endpoint is too long", connection_channel_name(ch));
            return -ENAMETOOLONG;
        }
        if (zmq_bind(s, ep) != 0) {
            int e = errno;
            if (e == EINVAL || e == ENODEV)
                log_error("the connection file's address \"%s\" is invalid: not an IP "
                          "address or an interface of this machine",
                          conn->ip);
            else if (e == EADDRNOTAVAIL)
                log_error("the connection file's address %s is not one of this "
                          "machine's",
                          conn->ip);
            else
                log_error("cannot bind the %s port %d on %s: %s%s",
                          connection_channel_name(ch), conn->ports[ch], conn->ip,
                          zmq_strerror(e),
                          e == EADDRINUSE ? " (is another kernel using it?)" : "");
            return -e;
        }
        log_debug("%s bound on %s", connection_channel_name(ch), ep);
    }
    return 0;
}

void channels_close(struct channels *c)
{
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        if (c->sockets[ch])
            zmq_close(c->sockets[ch]);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    memset(c, 0, sizeof *c);
}

static void free_frame(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Sends a large frame without a copy: ZeroMQ takes the block and frees it
 * (from its I/O thread) once it is written. Returns true if it failed. */
static bool send_owned(void *socket, struct wire_frame *f, int flags)
{
    zmq_msg_t part;
    if (zmq_msg_init_data(&part, f->data, f->len, free_frame, NULL) != 0)
        return true;
    f->data = NULL;
    if (zmq_msg_send(&part, socket, flags) >= 0)
        return false;
    int err = errno;
    zmq_msg_close(&part);
    errno = err;
    return true;
}

int channels_send(struct channels *c, enum connection_channel ch, const struct msg *m)
{
    struct wire_frame *frames;
    size_t n;
    int rc = msg_serialize(m, c->sign, &frames, &n);
    if (rc) {
        log_error("cannot serialise a %s message: %s", msg_type(m), strerror(-rc));
        return rc;
    }
    c->used |= 1u << ch;
    for (size_t i = 0; i < n; i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        if (frames[i].len >= ZERO_COPY_FROM
                ? send_owned(c->sockets[ch], &frames[i], flags)
                : zmq_send(c->sockets[ch], frames[i].data, frames[i].len, flags) < 0) {
            rc = -errno;
            /* A full pipe drops the message: that is the price of never blocking. */
            log_limited(&sent_logged, LOG_WARN, "dropped a %s message on %s: %s",
                        msg_type(m), connection_channel_name(ch), zmq_strerror(-rc));
            break;
        }
    }
    wire_frames_free(frames, n);
    return rc;
}

unsigned channels_take_used(struct channels *c)
{
    unsigned used = c->used;
    c->used = 0;
    return used;
}

/* One message read from ch; false to stop reading. */
static bool take(struct channels *c, enum connection_channel ch,
                 const struct wire_frame *frames, int n, const struct channels_sink *sink)
{
    if (ch == CONNECTION_HB) {
        for (int j = 0; j < n; j++)
            zmq_send(c->sockets[ch], frames[j].data, frames[j].len,
                     ZMQ_DONTWAIT | (j + 1 < n ? ZMQ_SNDMORE : 0));
        return true;
    }
    if (ch == CONNECTION_IOPUB) {
        /* A subscription (first byte 1) from a new client: it gets everything
         * (Jupyter's clients subscribe to "" anyway, and a SUB socket filters
         * what it receives), and a welcome, so that it knows its subscription
         * is live before it sends anything; welcomes, published to every
         * subscriber, are limited, as anyone can ask for them. */
        const unsigned char *d = frames[0].data;
        if (n == 1 && frames[0].len >= 1 && d[0] == 1) {
            zmq_setsockopt(c->sockets[ch], ZMQ_SUBSCRIBE, "", 0);
            double now = monotime_now();
            c->welcomes += (now - c->welcomed_at) * WELCOMES_PER_S;
            if (c->welcomes > WELCOMES_BURST || !c->welcomed_at)
                c->welcomes = WELCOMES_BURST;
            c->welcomed_at = now;
            if (c->welcomes >= 1) {
                c->welcomes -= 1;
                sink->subscribed(sink->data, (const char *)d + 1, frames[0].len - 1);
            }
        }
        return true;
    }
    struct msg *m = NULL;
    char err[256];
    bool go_on = true;
    int rc = msg_parse(frames, (size_t)n, c->sign, &m, err, sizeof err);
    if (rc == -EPROTO) {
        log_warn("an unreadable message on %s: %s", connection_channel_name(ch), err);
        sink->unreadable(sink->data, ch, &m, err);
    } else if (rc) {
        log_limited(&refused_logged, LOG_WARN, "dropped a message on %s: %s",
                    connection_channel_name(ch), err);
    } else {
        go_on = sink->msg(sink->data, ch, &m);
    }
    msg_free(m);
    return go_on;
}

void channels_drain(struct channels *c, enum connection_channel ch,
                    const struct channels_sink *sink)
{
    for (int i = 0; i < DRAIN_BATCH; i++) {
        struct zrecv r;
        int n = zrecv_read(c->sockets[ch], c->max_message, &r);
        if (n == -EAGAIN)
            return;
        if (n < 0) {
            log_limited(&refused_logged, LOG_WARN, "dropped a message on %s: %s",
                        connection_channel_name(ch),
                        n == -EMSGSIZE ? "too many frames, or larger than --max-message"
                                       : strerror(-n));
            continue;
        }
        bool go_on = take(c, ch, r.frames, n, sink);
        zrecv_release(&r);
        if (!go_on)
            return;
    }
}

bool channels_peer_present(struct channels *c, enum connection_channel ch,
                           const struct wire_frame *ident)
{
    void *s = c->sockets[ch];
    int on = 1, off = 0;
    if (!s || zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &on, sizeof on) != 0)
        return true;
    bool present = true;
    if (zmq_send(s, ident->data, ident->len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        present = errno != EHOSTUNREACH; /* a full pipe: still there */
    else
        zmq_send(s, "", 0, ZMQ_DONTWAIT);
    zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &off, sizeof off);
    return present;
}
