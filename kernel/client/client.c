/* client: connect to a kernel, send requests, gather their outcome.
 *
 * The hard part is knowing when a request is over. Its reply comes on one
 * socket and its output on another, in no fixed order between the two; the
 * output ends with status idle parented to the request. So a wait polls both
 * sockets (and the heartbeat, and whatever descriptors the caller watches)
 * until it has the reply and the idle, skipping messages that belong to other
 * requests or to other clients. The other hard part is the slow joiner: a SUB
 * socket receives nothing until its subscription has reached the kernel, so
 * client_ready repeats kernel_info_request until an iopub message arrives, as
 * jupyter_client's wait_for_ready does.
 *
 * Everything received is parsed and verified by protocol/msg.c; a message
 * that fails is counted and skipped, never trusted. */
#include "kernel/client/client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/util/monotime.h"
#include "kernel/util/zrecv.h"
#include "protocol/errbuf.h"

#define HB_INTERVAL_S   3.0  /* a heartbeat ping this often while waiting */
#define HB_GRACE_S      15.0 /* no echo for this long: the kernel is gone */
#define READY_RESEND_S  0.5  /* at most this long between kernel_info_requests */
#define READY_FIRST_S   0.05 /* the first resend: a subscription takes a moment */
#define SEND_TIMEOUT_MS 10000
#define CLOSE_LINGER_MS 100 /* what is still unsent at close may take this long */

static const int socket_types[CONNECTION_NCHANNELS] = {
    [CONNECTION_SHELL] = ZMQ_DEALER, [CONNECTION_IOPUB] = ZMQ_SUB,
    [CONNECTION_STDIN] = ZMQ_DEALER, [CONNECTION_CONTROL] = ZMQ_DEALER,
    [CONNECTION_HB] = ZMQ_REQ,
};

int client_open(struct client *c, const char *connection_file, char *err, size_t errlen)
{
    return client_open_with(c, connection_file, NULL, err, errlen);
}

int client_open_with(struct client *c, const char *connection_file,
                     const struct client_options *o, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int rc = connection_load(&c->conn, connection_file, err, errlen);
    if (rc)
        return rc;
    if ((rc = sign_init(&c->sign, c->conn.signature_scheme, c->conn.key,
                        c->conn.key_len))) {
        errbuf_set(rc, err, errlen, "cannot set up message signing: %s", strerror(-rc));
        goto fail;
    }
    const char *user = getenv("USER");
    struct passwd *pw = user ? NULL : getpwuid(getuid());
    if ((rc = msg_session_init(&c->session, user ? user
                                            : pw ? pw->pw_name
                                                 : "sandpit"))) {
        errbuf_set(rc, err, errlen, "cannot make a session id: %s", strerror(-rc));
        goto fail;
    }
    if (!(c->zctx = zmq_ctx_new())) {
        rc = errbuf_set(-errno, err, errlen, "cannot start ZeroMQ: %s",
                        zmq_strerror(errno));
        goto fail;
    }
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        void *s = zmq_socket(c->zctx, socket_types[ch]);
        if (!s) {
            rc = errbuf_set(-errno, err, errlen, "cannot make a ZeroMQ socket: %s",
                            zmq_strerror(errno));
            goto fail;
        }
        c->sockets[ch] = s;
        int linger = 1000, sndtimeo = SEND_TIMEOUT_MS, one = 1;
        int64_t maxmsg = (int64_t)WIRE_MAX_JSON * 2;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(s, ZMQ_SNDTIMEO, &sndtimeo, sizeof sndtimeo);
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
        if (o && o->reconnect_ms > 0)
            zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &o->reconnect_ms,
                           sizeof o->reconnect_ms);
        if (strchr(c->conn.ip, ':'))
            zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one);
        /* The kernel routes stdin requests to the identity that sent the
         * shell request: both sockets carry the session id, as in
         * jupyter_client. */
        if (ch == CONNECTION_SHELL || ch == CONNECTION_STDIN)
            zmq_setsockopt(s, ZMQ_ROUTING_ID, c->session.session,
                           strlen(c->session.session));
        if (ch == CONNECTION_IOPUB)
            zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
        if (ch == CONNECTION_HB) { /* a lost echo must not wedge the socket */
            zmq_setsockopt(s, ZMQ_REQ_RELAXED, &one, sizeof one);
            zmq_setsockopt(s, ZMQ_REQ_CORRELATE, &one, sizeof one);
        }
        char ep[PATH_MAX + 32];
        if (connection_endpoint(&c->conn, ch, ep, sizeof ep)) {
            rc = errbuf_set(-ENAMETOOLONG, err, errlen, "the %s endpoint is too long",
                            connection_channel_name(ch));
            goto fail;
        }
        if (zmq_connect(s, ep) != 0) {
            rc = errbuf_set(-errno, err, errlen, "cannot connect to %s: %s", ep,
                            zmq_strerror(errno));
            goto fail;
        }
    }
    return 0;
fail:
    client_close(c);
    return rc;
}

void client_close(struct client *c)
{
    /* Every request that matters has been answered by now: what is left (a
     * ping to a kernel that has exited) must not hold the close for a second. */
    int linger = CLOSE_LINGER_MS;
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        if (c->sockets[ch]) {
            zmq_setsockopt(c->sockets[ch], ZMQ_LINGER, &linger, sizeof linger);
            zmq_close(c->sockets[ch]);
        }
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    sign_release(&c->sign);
    connection_release(&c->conn);
    memset(c, 0, sizeof *c);
}

int client_send(struct client *c, enum connection_channel ch, const char *type,
                json_t **content, json_t **metadata, char *id)
{
    json_t *meta = metadata ? *metadata : NULL;
    if (metadata)
        *metadata = NULL;
    struct msg *m = msg_make(&c->session, type, NULL, content, false);
    if (!m) {
        json_decref(meta);
        return -ENOMEM;
    }
    if (meta) {
        json_decref(m->metadata);
        m->metadata = meta;
    }
    if (id)
        snprintf(id, CLIENT_ID_LEN, "%s", msg_id(m));
    struct wire_frame *frames;
    size_t n;
    int rc = msg_serialize(m, &c->sign, &frames, &n);
    msg_free(m);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (zmq_send(c->sockets[ch], frames[i].data, frames[i].len,
                     i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
            rc = -errno;
            break;
        }
    wire_frames_free(frames, n);
    return rc;
}

static json_t *execute_content(const char *code, bool silent, bool allow_stdin,
                               bool stop_on_error)
{
    return json_pack("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", silent,
                     "store_history", !silent, "user_expressions", "allow_stdin",
                     allow_stdin, "stop_on_error", stop_on_error);
}

int client_execute_quiet(struct client *c, const char *code, unsigned flags, char *id)
{
    json_t *content = execute_content(code, flags & CLIENT_EXEC_SILENT, false,
                                      !(flags & CLIENT_EXEC_KEEP_GOING));
    if (!content)
        return -ENOMEM;
    return client_send(c, CONNECTION_SHELL, "execute_request", &content, NULL, id);
}

int client_execute(struct client *c, const char *code, bool allow_stdin,
                   json_t **metadata, char *id)
{
    json_t *content = execute_content(code, false, allow_stdin, true);
    if (!content) {
        if (metadata) {
            json_decref(*metadata);
            *metadata = NULL;
        }
        return -ENOMEM;
    }
    return client_send(c, CONNECTION_SHELL, "execute_request", &content, metadata, id);
}

/* Reads one multipart message that is ready. 0 with *out new, -EAGAIN when
 * none is, -EBADMSG when one was read and dropped, or -errno. */
static int recv_one(struct client *c, void *sock, struct msg **out)
{
    *out = NULL;
    struct zrecv r;
    int rc = zrecv_read(sock, 0, &r);
    if (rc == -EMSGSIZE)
        rc = -EBADMSG; /* too many frames */
    else if (rc > 0)
        rc = msg_parse_with(r.frames, r.n, &c->sign, MSG_PARSE_LARGE, out, NULL, 0) != 0
                 ? -EBADMSG
                 : 0;
    if (rc == -EBADMSG)
        c->dropped++;
    zrecv_release(&r);
    return rc;
}

int client_recv(struct client *c, enum connection_channel ch, int timeout_ms,
                struct msg **out)
{
    double deadline = timeout_ms < 0 ? 0 : monotime_now() + timeout_ms / 1000.0;
    *out = NULL;
    for (;;) {
        int rc = recv_one(c, c->sockets[ch], out);
        if (rc != -EAGAIN && rc != -EBADMSG)
            return rc;
        if (rc == -EBADMSG)
            continue;
        long wait = -1;
        if (timeout_ms >= 0) {
            double left = deadline - monotime_now();
            if (left <= 0)
                return -ETIMEDOUT;
            wait = (long)(left * 1000) + 1;
        }
        zmq_pollitem_t item = {.socket = c->sockets[ch], .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, wait) < 0 && errno != EINTR)
            return -errno;
    }
}

static const char *parent_id(const struct msg *m)
{
    const char *v = json_string_value(json_object_get(m->parent_header, "msg_id"));
    return v ? v : "";
}

static bool is_idle(const struct msg *m)
{
    const char *state = json_string_value(json_object_get(m->content, "execution_state"));
    return strcmp(msg_type(m), "status") == 0 && state && strcmp(state, "idle") == 0;
}

/* The heartbeat while waiting: a ping every HB_INTERVAL_S, one at a time. */
struct heartbeat {
    bool outstanding;
    double sent_at, next_at;
};

static int heartbeat_tick(struct client *c, struct heartbeat *hb, double now)
{
    if (hb->outstanding)
        return now - hb->sent_at > HB_GRACE_S ? -EHOSTDOWN : 0;
    if (now < hb->next_at)
        return 0;
    if (zmq_send(c->sockets[CONNECTION_HB], "ping", 4, ZMQ_DONTWAIT) == 4) {
        hb->outstanding = true;
        hb->sent_at = now;
    }
    return 0;
}

static void heartbeat_read(struct client *c, struct heartbeat *hb, double now)
{
    char buf[64];
    while (zmq_recv(c->sockets[CONNECTION_HB], buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
        hb->outstanding = false;
        hb->next_at = now + HB_INTERVAL_S;
    }
}

enum { MAX_WATCH = 8 };

int client_wait(struct client *c, enum connection_channel ch, const char *id,
                const struct client_wait *w, struct msg **reply)
{
    static const struct client_wait none;
    if (!w)
        w = &none;
    *reply = NULL;
    double start = monotime_now();
    struct heartbeat hb = {.next_at = start + HB_INTERVAL_S};
    bool idle = w->skip_idle;
    size_t nfds = w->nfds < MAX_WATCH ? w->nfds : MAX_WATCH;
    int rc = 0;
    while (!*reply || !idle) {
        double now = monotime_now();
        if (w->timeout_s > 0 && now - start >= w->timeout_s) {
            rc = -ETIMEDOUT;
            break;
        }
        if (!w->no_heartbeat && (rc = heartbeat_tick(c, &hb, now)))
            break;
        zmq_pollitem_t items[3 + MAX_WATCH];
        memset(items, 0, sizeof items);
        items[0] = (zmq_pollitem_t){.socket = c->sockets[ch], .events = ZMQ_POLLIN};
        items[1] = (zmq_pollitem_t){.socket = c->sockets[CONNECTION_IOPUB],
                                    .events = ZMQ_POLLIN};
        items[2] =
            (zmq_pollitem_t){.socket = c->sockets[CONNECTION_HB], .events = ZMQ_POLLIN};
        for (size_t i = 0; i < nfds; i++)
            items[3 + i] = (zmq_pollitem_t){.fd = w->fds[i], .events = ZMQ_POLLIN};
        double wait = 1.0; /* at least this often: the heartbeat and the limit */
        if (w->timeout_s > 0 && start + w->timeout_s - now < wait)
            wait = start + w->timeout_s - now;
        if (zmq_poll(items, (int)(3 + nfds), (long)(wait * 1000) + 1) < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        now = monotime_now();
        if (items[2].revents & ZMQ_POLLIN)
            heartbeat_read(c, &hb, now);
        struct msg *m;
        while (!*reply && recv_one(c, c->sockets[ch], &m) != -EAGAIN) {
            if (m && strcmp(parent_id(m), id) == 0)
                *reply = m;
            else
                msg_free(m);
        }
        int r;
        while ((r = recv_one(c, c->sockets[CONNECTION_IOPUB], &m)) != -EAGAIN) {
            if (r || strcmp(parent_id(m), id) != 0) {
                msg_free(m);
                continue;
            }
            if (w->on_iopub)
                w->on_iopub(w->arg, m);
            if (is_idle(m))
                idle = true;
            msg_free(m);
            if (idle && *reply)
                break; /* what follows belongs to the next request */
        }
        for (size_t i = 0; i < nfds && !rc; i++)
            if ((items[3 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && w->on_fd)
                rc = w->on_fd(w->arg, w->fds[i]);
        if (rc)
            break;
    }
    if (rc) {
        msg_free(*reply);
        *reply = NULL;
    }
    return rc;
}

/* The ids of the requests one client_ready has sent: only answers to them
 * count, so that late messages from a kernel that has just exited (a
 * restart) are not taken for the new kernel's. */
struct sent_ids {
    char (*ids)[CLIENT_ID_LEN];
    size_t n, cap;
};

static bool sent_has(const struct sent_ids *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0)
            return true;
    return false;
}

/* What client_ready has so far: the ids it sent, the answer, whether iopub works. */
struct ready {
    struct sent_ids sent;
    struct msg *reply;
    bool iopub;
};

/* Sends one more kernel_info_request on ch, its id kept. 0 or -errno. */
static int ready_ask(struct client *c, enum connection_channel ch, struct ready *st)
{
    struct sent_ids *sent = &st->sent;
    if (sent->n == sent->cap) {
        size_t cap = sent->cap ? sent->cap * 2 : 16;
        void *ni = realloc(sent->ids, cap * sizeof *sent->ids);
        if (!ni)
            return -ENOMEM;
        sent->ids = ni;
        sent->cap = cap;
    }
    int rc = client_send(c, ch, "kernel_info_request", NULL, NULL, sent->ids[sent->n]);
    if (!rc)
        sent->n++;
    return rc;
}

/* Reads what has come on ch and iopub: the first answer to one of ours, and
 * whether iopub has shown it works. */
static void ready_take(struct client *c, enum connection_channel ch, struct ready *st)
{
    struct msg *m;
    int r;
    while ((r = recv_one(c, c->sockets[ch], &m)) != -EAGAIN) {
        if (!r && !st->reply && strcmp(msg_type(m), "kernel_info_reply") == 0 &&
            sent_has(&st->sent, parent_id(m)))
            st->reply = m;
        else
            msg_free(m);
    }
    while ((r = recv_one(c, c->sockets[CONNECTION_IOPUB], &m)) != -EAGAIN) {
        /* An answer to one of ours, or the welcome a kernel that
         * implements JEP 65 sends each new subscriber. */
        if (!r && (sent_has(&st->sent, parent_id(m)) ||
                   strcmp(msg_type(m), "iopub_welcome") == 0))
            st->iopub = true;
        msg_free(m);
    }
}

/* Waits for an answer or the time to resend, whichever first; the answer to
 * an earlier request of this call counts as well. 0, on_fd's value or -errno. */
static int ready_wait(struct client *c, const struct client_wait *w,
                      enum connection_channel ch, struct ready *st, double resend)
{
    size_t nfds = w->nfds < MAX_WATCH ? w->nfds : MAX_WATCH;
    int rc = 0;
    while (!rc && (!st->reply || !st->iopub) && monotime_now() < resend) {
        zmq_pollitem_t items[2 + MAX_WATCH];
        memset(items, 0, sizeof items);
        items[0] = (zmq_pollitem_t){.socket = c->sockets[ch], .events = ZMQ_POLLIN};
        items[1] = (zmq_pollitem_t){.socket = c->sockets[CONNECTION_IOPUB],
                                    .events = ZMQ_POLLIN};
        for (size_t i = 0; i < nfds; i++)
            items[2 + i] = (zmq_pollitem_t){.fd = w->fds[i], .events = ZMQ_POLLIN};
        long wait = (long)((resend - monotime_now()) * 1000) + 1;
        if (zmq_poll(items, (int)(2 + nfds), wait) < 0 && errno != EINTR)
            return -errno;
        ready_take(c, ch, st);
        for (size_t i = 0; i < nfds && !rc; i++)
            if ((items[2 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && w->on_fd)
                rc = w->on_fd(w->arg, w->fds[i]);
    }
    return rc;
}

int client_ready(struct client *c, const struct client_wait *w, struct msg **info)
{
    static const struct client_wait none;
    if (!w)
        w = &none;
    if (info)
        *info = NULL;
    double start = monotime_now();
    struct ready st = {{0}, NULL, false};
    int rc = 0;
    double interval = READY_FIRST_S;
    enum connection_channel ch = w->on_control ? CONNECTION_CONTROL : CONNECTION_SHELL;
    while (!rc && (!st.reply || !st.iopub)) {
        double now = monotime_now();
        if (w->timeout_s > 0 && now - start >= w->timeout_s) {
            rc = -ETIMEDOUT;
            break;
        }
        if ((rc = ready_ask(c, ch, &st)))
            break;
        double resend = now + interval;
        interval = interval * 2 < READY_RESEND_S ? interval * 2 : READY_RESEND_S;
        rc = ready_wait(c, w, ch, &st, resend);
    }
    free(st.sent.ids);
    if (!rc && info)
        *info = st.reply;
    else
        msg_free(st.reply);
    return rc;
}
