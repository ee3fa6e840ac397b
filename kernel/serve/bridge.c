/* bridge: kernels' channels over WebSockets (bridge.h).
 *
 * The hard parts. The sockets: each client's DEALERs live in the kernel's
 * ZeroMQ context, which the registry ends when it removes the kernel, so
 * the on_gone hook closes every client's sockets first (zmq_ctx_term would
 * wait for them for ever). ZMQ_FD: edge-like, so each socket is drained
 * whenever lws says its descriptor is readable and after every send on it.
 * Writing: lws takes one frame per writable turn, so frames wait in a queue
 * whose bytes are bounded; a client past the bound is dropped. */
#include "kernel/serve/bridge.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "kernel/serve/codec.h"
#include "kernel/serve/http.h"
#include "kernel/serve/loop.h"
#include "kernel/serve/zwire.h"
#include "kernel/util/log.h"

#define CHANNELS_SUFFIX "/channels"
/* WebSocket clients of one kernel: each takes three sockets of the kernel's
 * ZeroMQ context, which has room for 1,023. */
#define BRIDGE_MAX_CLIENTS 256

struct frame {
    struct frame *next;
    unsigned char *buf; /* LWS_PRE, then len bytes */
    size_t len;
    bool binary;
};

struct bridge_conn;

struct slot {
    struct bridge_conn *conn;
    enum connection_channel ch;
    void *sock;
    struct loop_watch *watch;
};

struct bridge_conn {
    struct serve *s;
    struct lws *wsi;
    struct serve_kernel *k;   /* NULL once the kernel has gone */
    struct bridge_conn *next; /* the kernel's other clients */
    enum codec_proto proto;
    char session_id[64];
    unsigned long long last_seq;
    struct slot slots[CONNECTION_NCHANNELS]; /* shell, stdin, control */
    unsigned char *rx;
    size_t rx_len;
    struct frame *head, *tail;
    size_t queued;
    bool closing;
};

bool bridge_handles(enum lws_callback_reasons reason)
{
    switch (reason) {
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
    case LWS_CALLBACK_ESTABLISHED:
    case LWS_CALLBACK_RECEIVE:
    case LWS_CALLBACK_SERVER_WRITEABLE:
    case LWS_CALLBACK_CLOSED:
        return true;
    default:
        return false;
    }
}

/* The kernel id of a channels path, into id (MODEL_ID_LEN + 1). */
static bool channels_id(const char *path, char *id)
{
    static const char prefix[] = "/api/kernels/";
    size_t n = strlen(path), plen = sizeof prefix - 1, slen = strlen(CHANNELS_SUFFIX);
    if (n > 0 && path[n - 1] == '/')
        n--;
    if (n != plen + MODEL_ID_LEN + slen || strncmp(path, prefix, plen) != 0 ||
        strncmp(path + plen + MODEL_ID_LEN, CHANNELS_SUFFIX, slen) != 0)
        return false;
    memcpy(id, path + plen, MODEL_ID_LEN);
    id[MODEL_ID_LEN] = 0;
    return model_id_valid(id);
}

static struct serve_kernel *kernel_of(struct lws *wsi)
{
    char path[256], id[MODEL_ID_LEN + 1];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) >= (int)sizeof path ||
        lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) <= 0 ||
        !channels_id(path, id))
        return NULL;
    struct serve_kernel *k = registry_find(&serve_of(wsi)->reg, id);
    return k && !k->dead_at ? k : NULL;
}

static bool origin_allowed(struct lws *wsi)
{
    char origin[512], host[256] = "";
    int olen = lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN);
    if (olen <= 0)
        return auth_origin_ok(NULL, NULL, NULL);
    if (olen >= (int)sizeof origin ||
        lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return false;
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0)
        host[0] = 0;
    return auth_origin_ok(origin, host, serve_of(wsi)->cfg.allow_origin);
}

/* Whether the upgrade on wsi may go on: 0, or the HTTP status that refuses
 * it (401 without the token, 403 from an origin not allowed, 404 for a
 * kernel this server does not have, 503 for one with all the clients it
 * takes), so that a client, or a load balancer trying instances in turn,
 * can tell why. */
static int upgrade_refusal(struct lws *wsi)
{
    struct serve_kernel *k;
    if (!http_authorised(wsi))
        return 401;
    if (!origin_allowed(wsi))
        return 403;
    if (!(k = kernel_of(wsi)))
        return 404;
    return k->connections < BRIDGE_MAX_CLIENTS ? 0 : 503;
}

/* Before the upgrade is answered: a refusal is an HTTP answer. lws takes a
 * positive return as "answered here". */
static int confirm(struct lws *wsi)
{
    int status = upgrade_refusal(wsi);
    if (!status)
        return 0;
    serve_of(wsi)->metrics.ws_rejected++;
    return lws_return_http_status(wsi, (unsigned int)status, model_reason(status)) ? -1
                                                                                   : 1;
}

static int filter(struct lws *wsi)
{
    struct serve *s = serve_of(wsi);
    const struct lws_protocols *p = lws_get_protocol(wsi);
    bool ok = p && strcmp(p->name, LOOP_PROTOCOL) != 0 && upgrade_refusal(wsi) == 0;
    if (!ok)
        s->metrics.ws_rejected++;
    return ok ? 0 : 1;
}

static void queue_frame(struct bridge_conn *c, unsigned char **buf, size_t len,
                        bool binary)
{
    struct frame *f = c->closing ? NULL : malloc(sizeof *f);
    if (!f) {
        free(*buf);
        *buf = NULL;
        return;
    }
    f->buf = *buf;
    *buf = NULL;
    f->len = len;
    f->binary = binary;
    f->next = NULL;
    if (c->tail)
        c->tail->next = f;
    else
        c->head = f;
    c->tail = f;
    c->queued += len;
    if (c->queued > SERVE_MAX_WS_QUEUE) {
        log_warn("a client of kernel %s reads too slowly: disconnected",
                 c->k ? c->k->id : "?");
        c->closing = true;
    }
    lws_callback_on_writable(c->wsi);
}

static void send_msg(struct bridge_conn *c, const struct msg *m, const char *channel)
{
    unsigned char *buf;
    size_t len;
    bool binary;
    if (codec_encode(m, channel, c->proto, LWS_PRE, &buf, &len, &binary) == 0)
        queue_frame(c, &buf, len, binary);
}

static void drain_slot(struct slot *sl)
{
    struct bridge_conn *c = sl->conn;
    while (c->k && sl->sock && zwire_readable(sl->sock)) {
        struct msg *m;
        int rc = zwire_recv(sl->sock, &c->k->client.sign, &m, NULL);
        if (rc == -EAGAIN)
            break;
        if (rc == 0) {
            registry_touch(c->k);
            send_msg(c, m,
                     sl->ch == CONNECTION_SHELL   ? "shell"
                     : sl->ch == CONNECTION_STDIN ? "stdin"
                                                  : "control");
        }
        msg_free(m);
        if (rc && rc != -EBADMSG)
            break;
    }
}

static void on_slot(void *arg)
{
    drain_slot(arg);
}

static void close_slots(struct bridge_conn *c)
{
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        struct slot *sl = &c->slots[ch];
        loop_unwatch(&sl->watch);
        if (sl->sock) {
            int linger = 0;
            zmq_setsockopt(sl->sock, ZMQ_LINGER, &linger, sizeof linger);
            zmq_close(sl->sock);
            sl->sock = NULL;
        }
    }
}

/* The DEALERs on shell, stdin and control. 0 or -1. */
static int open_slots(struct bridge_conn *c, const char *routing_id)
{
    static const enum connection_channel chans[] = {CONNECTION_SHELL, CONNECTION_STDIN,
                                                    CONNECTION_CONTROL};
    for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) {
        struct slot *sl = &c->slots[chans[i]];
        char ep[PATH_MAX + 32];
        sl->conn = c;
        sl->ch = chans[i];
        if (!(sl->sock = zmq_socket(c->k->client.zctx, ZMQ_DEALER)))
            return -1;
        int linger = 0, hwm = 10000;
        int64_t maxmsg = (int64_t)WIRE_MAX_JSON * 2;
        zmq_setsockopt(sl->sock, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(sl->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
        zmq_setsockopt(sl->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
        if (chans[i] != CONNECTION_CONTROL)
            zmq_setsockopt(sl->sock, ZMQ_ROUTING_ID, routing_id, strlen(routing_id));
        if (connection_endpoint(&c->k->client.conn, chans[i], ep, sizeof ep) ||
            zmq_connect(sl->sock, ep) != 0 ||
            !(sl->watch = loop_watch(c->s->vh, zwire_fd(sl->sock), on_slot, sl)))
            return -1;
    }
    return 0;
}

static void replay_one(void *arg, const struct msg *m, unsigned long long seq)
{
    struct bridge_conn *c = arg;
    send_msg(c, m, "iopub");
    c->last_seq = seq;
}

static int establish(struct lws *wsi, struct serve_pss *pss)
{
    struct serve *s = serve_of(wsi);
    struct serve_kernel *k = kernel_of(wsi);
    struct bridge_conn *c = k ? calloc(1, sizeof *c) : NULL;
    if (!c)
        return -1;
    static unsigned long long counter;
    char routing[96], sid[128];
    c->s = s;
    c->wsi = wsi;
    c->k = k;
    const struct lws_protocols *p = lws_get_protocol(wsi);
    c->proto = p && strcmp(p->name, CODEC_V1_NAME) == 0 ? CODEC_V1 : CODEC_LEGACY;
    const char *v = lws_get_urlarg_by_name(wsi, "session_id=", sid, sizeof sid);
    if (v && strlen(v) < sizeof c->session_id)
        snprintf(c->session_id, sizeof c->session_id, "%s", v);
    snprintf(routing, sizeof routing, "ws-%llu-%s", ++counter, c->session_id);
    pss->conn = c;
    if (open_slots(c, routing)) {
        close_slots(c);
        c->k = NULL; /* not attached: nothing to detach at its close */
        return -1;
    }
    c->next = k->bridge;
    k->bridge = c;
    k->connections++;
    c->last_seq = k->seq;
    s->metrics.ws_opened++;
    if (c->session_id[0])
        registry_replay(k, c->session_id, replay_one, c);
    registry_touch(k);
    return 0;
}

static void detach(struct bridge_conn *c)
{
    struct serve_kernel *k = c->k;
    if (!k)
        return;
    for (struct bridge_conn **p = (struct bridge_conn **)&k->bridge; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    k->connections--;
    if (c->session_id[0] && !k->dead_at)
        registry_session_away(k, c->session_id, c->last_seq);
    close_slots(c);
    c->k = NULL;
}

static void conn_free(struct serve_pss *pss)
{
    struct bridge_conn *c = pss->conn;
    if (!c)
        return;
    detach(c);
    close_slots(c);
    while (c->head) {
        struct frame *f = c->head;
        c->head = f->next;
        free(f->buf);
        free(f);
    }
    free(c->rx);
    free(c);
    pss->conn = NULL;
}

static int deliver(struct bridge_conn *c, struct lws *wsi)
{
    struct serve *s = c->s;
    bool binary = lws_frame_is_binary(wsi);
    enum connection_channel ch;
    struct msg *m = NULL;
    char err[256];
    int rc = codec_decode(c->rx, c->rx_len, binary, c->proto, &ch, &m, err, sizeof err);
    free(c->rx);
    c->rx = NULL;
    c->rx_len = 0;
    if (rc || !c->k || !c->slots[ch].sock) {
        s->metrics.ws_dropped_msgs++;
        msg_free(m);
        return 0;
    }
    struct slot *sl = &c->slots[ch];
    rc = zwire_send(sl->sock, &c->k->client.sign, m);
    msg_free(m);
    if (rc)
        s->metrics.ws_dropped_msgs++;
    registry_touch(c->k);
    drain_slot(sl); /* the send may have taken the descriptor's signal */
    return 0;
}

static int receive(struct lws *wsi, struct bridge_conn *c, const void *in, size_t len)
{
    if (!c || c->closing)
        return 0;
    if (c->rx_len + len > c->s->cfg.max_ws_message) {
        static const char why[] = "message too large";
        lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *)why,
                         sizeof why - 1);
        return -1;
    }
    unsigned char *rx = realloc(c->rx, c->rx_len + len + 1);
    if (!rx)
        return -1;
    memcpy(rx + c->rx_len, in, len);
    c->rx = rx;
    c->rx_len += len;
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0)
        return 0;
    return deliver(c, wsi);
}

static int writeable(struct lws *wsi, struct bridge_conn *c)
{
    if (!c)
        return -1;
    struct frame *f = c->head;
    if (!f) {
        if (c->closing) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, NULL, 0);
            return -1;
        }
        return 0;
    }
    c->head = f->next;
    if (!c->head)
        c->tail = NULL;
    c->queued -= f->len;
    int n = lws_write(wsi, f->buf + LWS_PRE, f->len,
                      f->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    free(f->buf);
    free(f);
    if (n < 0)
        return -1;
    if (c->head || c->closing)
        lws_callback_on_writable(wsi);
    return 0;
}

int bridge_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                    void *in, size_t len)
{
    struct serve_pss *pss = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm(wsi);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return filter(wsi);
    case LWS_CALLBACK_ESTABLISHED:
        return pss ? establish(wsi, pss) : -1;
    case LWS_CALLBACK_RECEIVE:
        return receive(wsi, pss ? pss->conn : NULL, in, len);
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return writeable(wsi, pss ? pss->conn : NULL);
    case LWS_CALLBACK_CLOSED:
        if (pss)
            conn_free(pss);
        return 0;
    default:
        return 0;
    }
}

/* --- the registry's hooks ------------------------------------------------ */

static void copy_to(struct bridge_conn *c, const unsigned char *enc, size_t len,
                    bool binary)
{
    unsigned char *buf = malloc(LWS_PRE + len);
    if (!buf)
        return;
    memcpy(buf + LWS_PRE, enc + LWS_PRE, len);
    queue_frame(c, &buf, len, binary);
}

static void hook_iopub(void *arg, struct serve_kernel *k, const struct msg *m,
                       unsigned long long seq)
{
    (void)arg;
    unsigned char *enc[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    bool binary[2] = {false, false}, tried[2] = {false, false};
    for (struct bridge_conn *c = k->bridge; c; c = c->next) {
        int p = c->proto;
        if (!tried[p]) {
            tried[p] = true;
            if (codec_encode(m, "iopub", c->proto, LWS_PRE, &enc[p], &len[p], &binary[p]))
                enc[p] = NULL;
        }
        if (enc[p])
            copy_to(c, enc[p], len[p], binary[p]);
        c->last_seq = seq;
    }
    free(enc[0]);
    free(enc[1]);
}

static void hook_dead(void *arg, struct serve_kernel *k)
{
    struct serve *s = arg;
    json_t *content = json_pack("{s:s}", "execution_state", "dead");
    struct msg *m =
        content ? msg_make(&s->session, "status", NULL, &content, false) : NULL;
    for (struct bridge_conn *c = k->bridge, *next; c; c = next) {
        next = c->next;
        if (m)
            send_msg(c, m, "iopub");
        detach(c);
        c->closing = true;
        lws_callback_on_writable(c->wsi);
    }
    msg_free(m);
}

static void hook_gone(void *arg, struct serve_kernel *k)
{
    (void)arg;
    for (struct bridge_conn *c = k->bridge, *next; c; c = next) {
        next = c->next;
        detach(c);
        c->closing = true;
        lws_callback_on_writable(c->wsi);
    }
}

void bridge_hook(struct serve *s)
{
    s->reg.on_iopub = hook_iopub;
    s->reg.on_dead = hook_dead;
    s->reg.on_gone = hook_gone;
    s->reg.hook_arg = s;
}
