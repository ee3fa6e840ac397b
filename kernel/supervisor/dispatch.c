/* dispatch: msg_type to handler, and nothing else.
 *
 * On the shell channel, replies come in the order of the requests, as from
 * ipykernel: a request that the supervisor answers itself (kernel_info,
 * history, an unknown one) waits its turn in its shell's queue behind the
 * requests for the worker, and is answered when it reaches the front (a
 * history query's answer comes from its thread: the queue waits for it). On
 * control it is answered at once, and so is interrupt_request wherever it
 * comes (an interrupt that waited for the cell it interrupts would be none).
 *
 * Status busy and idle frame every request, once each, in that order,
 * whatever happens in between: they are published by the request's begin and
 * end in shells.c alone, which every way below goes through. */
#include "kernel/supervisor/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "kernel/util/log.h"
#include "kernel/supervisor/handlers.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/shells.h"

typedef void handler_fn(struct kernel *k, struct request *req);

struct handler {
    const char *msg_type;
    handler_fn *fn; /* the supervisor's own; NULL: queued for the worker */
};

static const struct handler handlers[] = {
    {"kernel_info_request", handlers_kernel_info},
    {"connect_request", handlers_connect},
    {"history_request", handlers_history},
    {"shutdown_request", handlers_shutdown},
    {"interrupt_request", handlers_interrupt},
    {"create_subshell_request", handlers_create_subshell},
    {"delete_subshell_request", handlers_delete_subshell},
    {"list_subshell_request", handlers_list_subshell},
    {"execute_request", NULL},
    {"is_complete_request", NULL},
    {"complete_request", NULL},
    {"inspect_request", NULL},
    {"comm_info_request", NULL},
    /* Comm messages from the front end: the worker handles them; no reply. */
    {"comm_open", NULL},
    {"comm_msg", NULL},
    {"comm_close", NULL},
};

static const struct handler *find_handler(const char *type)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].msg_type, type) == 0)
            return &handlers[i];
    return NULL;
}

/* A request nobody handles: an error reply if it is a request. */
static void answer_unknown(struct kernel *k, struct request *r)
{
    const char *type = msg_type(r->msg);
    log_warn("unknown message type %s on %s", type, connection_channel_name(r->channel));
    if (request_type_is_request(type)) {
        char why[160];
        snprintf(why, sizeof why, "sandpit does not handle %.100s", type);
        outbox_error(k, r, "NotImplementedError", why);
    }
}

void dispatch_msg(struct kernel *k, struct msg **m, enum connection_channel ch)
{
    struct request *r = request_new(m, ch);
    if (!r) {
        log_error("out of memory: dropped a message on %s", connection_channel_name(ch));
        return;
    }
    const char *type = msg_type(r->msg);
    log_debug("%s %s on %s", type, msg_id(r->msg), connection_channel_name(ch));
    const struct handler *h = find_handler(type);
    r->answer = !h ? answer_unknown : h->fn;
    if (r->answer && (ch == CONNECTION_CONTROL || r->answer == handlers_interrupt))
        shells_answer(k, &r);
    else
        shells_submit(k, &r);
}

void dispatch_unreadable(struct kernel *k, struct msg **m, enum connection_channel ch,
                         const char *why)
{
    if (ch == CONNECTION_STDIN || !request_type_is_request(msg_type(*m))) {
        msg_free(*m); /* no reply is due */
        *m = NULL;
        return;
    }
    struct request *r = request_new(m, ch);
    if (!r) {
        log_error("out of memory: dropped a message on %s", connection_channel_name(ch));
        return;
    }
    char text[320];
    snprintf(text, sizeof text, "the kernel could not read this request: %s", why);
    shells_refuse(k, &r, "ValueError", text);
}
