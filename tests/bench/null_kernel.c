/* null_kernel: the floor against which `make bench` measures sandpit.
 *
 *   bench-null-kernel -f CONNECTION_FILE
 *
 * A Jupyter kernel that runs nothing: it binds the five channels of its
 * connection file, and answers kernel_info_request and execute_request with
 * fixed replies, publishing what a real kernel publishes around them (status
 * busy, execute_input, the reply, status idle), so a client cannot tell it
 * from a kernel with an instant interpreter. Every message goes through
 * sandpit's protocol layer as the supervisor's do (split, signature checked,
 * JSON parsed; built, serialised, signed), on the same libzmq, so the time a
 * cell takes here is what a C kernel on this protocol layer cannot go below:
 * the floor is measured in the same run as the kernels, never assumed.
 *
 * It is a process of its own (build/bench-null-kernel), started from a
 * kernelspec like the others; it is not part of the sandpit binary. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "protocol/connection.h"
#include "protocol/msg.h"
#include "protocol/sign.h"

#define MAX_PARTS 64

struct null_kernel {
    struct connection conn;
    struct sign sign;
    struct msg_session session;
    void *zctx;
    void *sockets[CONNECTION_NCHANNELS];
    long execution_count;
    bool stop;
};

static const int socket_types[CONNECTION_NCHANNELS] = {
    [CONNECTION_SHELL] = ZMQ_ROUTER, [CONNECTION_IOPUB] = ZMQ_PUB,
    [CONNECTION_STDIN] = ZMQ_ROUTER, [CONNECTION_CONTROL] = ZMQ_ROUTER,
    [CONNECTION_HB] = ZMQ_REP,
};

static int send_msg(struct null_kernel *k, enum connection_channel ch, struct msg *m)
{
    struct wire_frame *frames;
    size_t n;
    int rc = msg_serialize(m, &k->sign, &frames, &n);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (zmq_send(k->sockets[ch], frames[i].data, frames[i].len,
                     i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            rc = -errno;
    wire_frames_free(frames, n);
    return rc;
}

/* Publishes msg_type with content (taken over) on iopub, parented to parent. */
static void publish(struct null_kernel *k, const struct msg *parent, const char *msg_type,
                    json_t *content)
{
    struct msg *m = msg_make(&k->session, msg_type, parent, &content, false);
    if (!m)
        return;
    char topic[96];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session.session, msg_type);
    msg_add_ident(m, topic, strlen(topic));
    send_msg(k, CONNECTION_IOPUB, m);
    msg_free(m);
}

static void status(struct null_kernel *k, const struct msg *parent, const char *state)
{
    publish(k, parent, "status", json_pack("{s:s}", "execution_state", state));
}

static void reply(struct null_kernel *k, enum connection_channel ch,
                  const struct msg *parent, const char *msg_type, json_t *content)
{
    struct msg *m = msg_make(&k->session, msg_type, parent, &content, true);
    if (m)
        send_msg(k, ch, m);
    msg_free(m);
}

static json_t *kernel_info(void)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:s, s:[]}", "status",
                     "ok", "protocol_version", MSG_PROTOCOL_VERSION, "implementation",
                     "sandpit-null", "implementation_version", "0", "language_info",
                     "name", "python", "version", "3", "mimetype", "text/x-python",
                     "file_extension", ".py", "banner", "the null kernel of make bench",
                     "help_links");
}

/* One request: busy, its fixed reply (and execute_input), idle. */
static void handle(struct null_kernel *k, enum connection_channel ch, const struct msg *m)
{
    const char *type = msg_type(m);
    status(k, m, "busy");
    if (strcmp(type, "execute_request") == 0) {
        json_t *code = json_object_get(m->content, "code");
        long count = ++k->execution_count;
        publish(k, m, "execute_input",
                json_pack("{s:O?, s:i}", "code", code, "execution_count", (int)count));
        reply(k, ch, m, "execute_reply",
              json_pack("{s:s, s:i, s:{}, s:[]}", "status", "ok", "execution_count",
                        (int)count, "user_expressions", "payload"));
    } else if (strcmp(type, "kernel_info_request") == 0) {
        reply(k, ch, m, "kernel_info_reply", kernel_info());
    } else if (strcmp(type, "shutdown_request") == 0) {
        json_t *restart = json_object_get(m->content, "restart");
        reply(k, ch, m, "shutdown_reply",
              json_pack("{s:s, s:b}", "status", "ok", "restart", json_is_true(restart)));
        k->stop = true;
    } else if (strcmp(type, "interrupt_request") == 0) {
        reply(k, ch, m, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    } else {
        /* Any other request: an error reply of the matching type, as a kernel
         * that does not implement it sends. */
        char name[128];
        size_t n = strlen(type);
        if (n > 8 && strcmp(type + n - 8, "_request") == 0)
            snprintf(name, sizeof name, "%.*s_reply", (int)(n - 8), type);
        else
            snprintf(name, sizeof name, "%s_reply", type);
        reply(k, ch, m, name,
              json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                        "NotImplementedError", "evalue", type, "traceback"));
    }
    status(k, m, "idle");
}

/* Reads and handles every message waiting on a ROUTER channel. */
static void drain(struct null_kernel *k, enum connection_channel ch)
{
    for (;;) {
        zmq_msg_t parts[MAX_PARTS];
        struct wire_frame frames[MAX_PARTS];
        size_t n = 0;
        int more = 1;
        while (more) {
            zmq_msg_t *p = &parts[n < MAX_PARTS ? n : MAX_PARTS - 1];
            zmq_msg_init(p);
            if (zmq_msg_recv(p, k->sockets[ch], n ? 0 : ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(p);
                if (n == 0)
                    return;
                break;
            }
            more = zmq_msg_more(p);
            if (n < MAX_PARTS) {
                frames[n].data = zmq_msg_data(p);
                frames[n].len = zmq_msg_size(p);
                n++;
            } else {
                zmq_msg_close(p); /* too many frames: wire_split refuses it */
            }
        }
        struct msg *m = NULL;
        char err[256];
        int rc = msg_parse(frames, n, &k->sign, &m, err, sizeof err);
        if (rc == 0)
            handle(k, ch, m);
        else
            fprintf(stderr, "null kernel: dropped a message: %s\n", err);
        msg_free(m);
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&parts[i]);
    }
}

static int open_sockets(struct null_kernel *k)
{
    k->zctx = zmq_ctx_new();
    if (!k->zctx)
        return -errno;
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        char ep[512];
        int linger = 1000;
        if (!(k->sockets[ch] = zmq_socket(k->zctx, socket_types[ch])))
            return -errno;
        zmq_setsockopt(k->sockets[ch], ZMQ_LINGER, &linger, sizeof linger);
        if (connection_endpoint(&k->conn, ch, ep, sizeof ep) ||
            zmq_bind(k->sockets[ch], ep) != 0) {
            fprintf(stderr, "null kernel: cannot bind %s: %s\n",
                    connection_channel_name(ch), zmq_strerror(errno));
            return -EADDRINUSE;
        }
    }
    return 0;
}

static void serve(struct null_kernel *k)
{
    while (!k->stop) {
        zmq_pollitem_t items[] = {
            {.socket = k->sockets[CONNECTION_SHELL], .events = ZMQ_POLLIN},
            {.socket = k->sockets[CONNECTION_CONTROL], .events = ZMQ_POLLIN},
            {.socket = k->sockets[CONNECTION_HB], .events = ZMQ_POLLIN},
        };
        if (zmq_poll(items, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (items[1].revents & ZMQ_POLLIN)
            drain(k, CONNECTION_CONTROL);
        if (items[0].revents & ZMQ_POLLIN)
            drain(k, CONNECTION_SHELL);
        if (items[2].revents & ZMQ_POLLIN) {
            char ping[256];
            int n = zmq_recv(k->sockets[CONNECTION_HB], ping, sizeof ping, ZMQ_DONTWAIT);
            if (n >= 0)
                zmq_send(k->sockets[CONNECTION_HB], ping,
                         (size_t)n < sizeof ping ? (size_t)n : sizeof ping, 0);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "-f") != 0) {
        fprintf(stderr, "usage: bench-null-kernel -f CONNECTION_FILE\n");
        return 2;
    }
    struct null_kernel k;
    memset(&k, 0, sizeof k);
    char err[512];
    int status = 1;
    signal(SIGINT, SIG_IGN); /* interrupt_mode signal: nothing runs to interrupt */
    if (connection_load(&k.conn, argv[2], err, sizeof err) != 0) {
        fprintf(stderr, "null kernel: %s\n", err);
        return 1;
    }
    if (sign_init(&k.sign, k.conn.signature_scheme, k.conn.key, k.conn.key_len) != 0 ||
        msg_session_init(&k.session, "null") != 0) {
        fprintf(stderr, "null kernel: cannot set up signing\n");
        goto out;
    }
    if (open_sockets(&k) == 0) {
        serve(&k);
        status = 0;
    }
out:
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        if (k.sockets[ch])
            zmq_close(k.sockets[ch]);
    if (k.zctx)
        zmq_ctx_term(k.zctx);
    sign_release(&k.sign);
    connection_release(&k.conn);
    return status;
}
