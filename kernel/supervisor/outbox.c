/* outbox: build and hand over the supervisor's messages to clients.
 *
 * Why one file: every message needs the same three things done the same way
 * (a header from the session, the parent's header and identities, an iopub
 * topic), and the order of busy, reply and idle that clients rely on is easier
 * to keep when status has exactly two functions. A message that cannot be
 * made (out of memory) is logged and not sent: the kernel goes on. */
#include "kernel/supervisor/outbox.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernel/util/log.h"

static void send_iopub(struct kernel *k, struct msg *m, const char *msg_type)
{
    char topic[160];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session.session, msg_type);
    msg_add_ident(m, topic, strlen(topic));
    k->io.send(k->io.ctx, CONNECTION_IOPUB, m);
}

void outbox_publish_full(struct kernel *k, const json_t *parent_header,
                         const char *msg_type, json_t **content, const json_t *metadata,
                         const struct wire_frame *buffers, size_t nbuffers)
{
    struct msg *m = msg_make(&k->session, msg_type, NULL, content, false);
    if (!m) {
        log_error("out of memory making a %s", msg_type);
        return;
    }
    if (parent_header) {
        json_decref(m->parent_header);
        m->parent_header = json_deep_copy(parent_header);
        if (!m->parent_header)
            m->parent_header = json_object();
    }
    if (json_is_object(metadata)) {
        json_decref(m->metadata);
        m->metadata = json_deep_copy(metadata);
        if (!m->metadata)
            m->metadata = json_object();
    }
    for (size_t i = 0; i < nbuffers; i++)
        msg_add_buffer(m, buffers[i].data, buffers[i].len);
    send_iopub(k, m, msg_type);
    msg_free(m);
}

void outbox_publish(struct kernel *k, const json_t *parent_header, const char *msg_type,
                    json_t **content)
{
    outbox_publish_full(k, parent_header, msg_type, content, NULL, NULL, 0);
}

static void publish_status(struct kernel *k, const struct request *req, const char *state)
{
    json_t *content = json_pack("{s:s}", "execution_state", state);
    outbox_publish(k, req ? req->msg->header : NULL, "status", &content);
}

void outbox_busy(struct kernel *k, const struct request *req)
{
    publish_status(k, req, "busy");
}

void outbox_idle(struct kernel *k, const struct request *req)
{
    publish_status(k, req, "idle");
}

void outbox_reply(struct kernel *k, const struct request *req, const char *msg_type,
                  json_t **content, json_t *metadata)
{
    struct msg *m = msg_make(&k->session, msg_type, req->msg, content, true);
    if (!m) {
        json_decref(metadata);
        log_error("out of memory making a %s", msg_type);
        return;
    }
    if (metadata) {
        json_decref(m->metadata);
        m->metadata = metadata;
    }
    k->io.send(k->io.ctx, req->channel, m);
    msg_free(m);
}

json_t *outbox_reply_metadata(struct kernel *k, const char *status)
{
    char date[40];
    msg_date_now(date, sizeof date);
    return json_pack("{s:s, s:b, s:s, s:s}", "started", date, "dependencies_met", 1,
                     "engine", k->session.session, "status", status);
}

void outbox_error(struct kernel *k, const struct request *req, const char *ename,
                  const char *evalue)
{
    char type[96];
    json_t *c = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename,
                          "evalue", evalue, "traceback");
    if (c && req->execute) {
        json_object_set_new(c, "execution_count", json_integer(req->reply_count));
        json_object_set_new(c, "user_expressions", json_object());
        json_object_set_new(c, "payload", json_array());
    }
    outbox_reply(k, req, request_reply_type(req, type, sizeof type), &c,
                 outbox_reply_metadata(k, "error"));
}

int outbox_input_request(struct kernel *k, const struct request *req, json_t **content,
                         char *id, size_t idlen)
{
    struct msg *m = msg_make(&k->session, "input_request", req->msg, content, true);
    if (!m)
        return -ENOMEM;
    snprintf(id, idlen, "%s", msg_id(m));
    int rc = k->io.send(k->io.ctx, CONNECTION_STDIN, m);
    msg_free(m);
    return rc;
}
