/* request: a client's request that the supervisor is handling, and everything
 * that belongs to it alone: its message, where its reply goes, its flags, its
 * time limit and timers, its output count and whether it waits for input.
 * Nothing of one request lives in a process-wide variable, so that a subshell's
 * request cannot overwrite the main shell's. A request owns its message. */
#ifndef SANDPIT_REQUEST_H
#define SANDPIT_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/connection.h"
#include "protocol/msg.h"

#define REQUEST_ID_MAX 128 /* longest msg_id kept for matching */

struct kernel;

/* Output counted against the caps (limits.c): text (streams, and every part of a
 * display or result but its images) and images, each with its own cap. */
struct request_output {
    unsigned long text, images;                 /* bytes sent */
    unsigned long text_dropped, images_dropped; /* bytes dropped past the caps */
    unsigned long rate_dropped; /* messages dropped past the kernel's rate */
    bool rate_told;             /* the line saying so has been published */
    bool error_cut;             /* an error past the cap went through, cut short */
    bool result_cut;            /* so did the cell's result, its text alone */
};

struct request {
    struct msg *msg;
    enum connection_channel channel; /* where the reply goes: shell or control */
    struct request *next;            /* in its shell's queue */
    bool execute;                    /* an execute_request */
    /* The supervisor's own handler, which answers it when its turn comes in its
     * shell's queue (dispatch.c sets it); NULL: the worker answers it. */
    void (*answer)(struct kernel *k, struct request *r);
    /* Set by answer when it keeps the request, to answer it later through
     * shells_answered (its handler owns it until then). */
    bool deferred;
    /* Its status busy and idle have been published: shells.c's begin and end,
     * the only two places that publish them, each once a request (asserted). */
    bool begun, ended;
    /* execute_request only */
    int execution_count;
    /* The count its reply carries: its own, or, for a cell that stores no
     * history, the last stored cell's, as ipykernel answers. */
    int reply_count;
    bool silent, store_history, stop_on_error;
    /* limits (limits.c) */
    double timeout_s; /* effective limit for this request; 0: none */
    double sent_at;   /* the loop's time when it went to the worker */
    bool interrupted_for_timeout;
    long long limit_timer;      /* time event of the time limit; 0: none */
    long long escalation_timer; /* after an interrupt: the end of its grace period */
    /* A user's interrupt went unheeded through its grace period, and the client
     * was told: the next interrupt restarts the worker. */
    bool interrupt_told;
    struct request_output output;
    /* stdin: the msg_id of the input_request sent for it, "" when not waiting */
    char input_id[REQUEST_ID_MAX];
};

/* A new request for the message *m (taken over: *m is NULL afterwards, also
 * on failure). NULL when out of memory. request_free accepts NULL. */
struct request *request_new(struct msg **m, enum connection_channel ch);
void request_free(struct request *r);

/* Whether msg_type names a request (it ends in "_request"): one that is due
 * a reply. */
bool request_type_is_request(const char *msg_type);

/* Whether the request is answered on its channel: comm messages get only busy
 * and idle (comm_info_request excepted). */
bool request_has_reply(const struct request *r);

/* The reply's msg_type ("execute_reply" for "execute_request") in buf. */
const char *request_reply_type(const struct request *r, char *buf, size_t len);

#endif
