/* outbox: every message the supervisor sends to clients is made here (a fresh
 * header from the session, the parent, the signature) and handed to
 * kernel_io.send: replies on the request's channel, events on iopub, input
 * requests on stdin. Status busy and idle are published by outbox_busy and
 * outbox_idle, which a request's begin and end (shells.c) alone call. Requests are
 * borrowed; a function that takes json_t **content takes it over and sets *content to
 * NULL (NULL means {}). */
#ifndef SANDPIT_OUTBOX_H
#define SANDPIT_OUTBOX_H

#include <jansson.h>

#include "kernel/supervisor/kernel.h"

/* status busy and idle, parented to req (NULL: no parent). */
void outbox_busy(struct kernel *k, const struct request *req);
void outbox_idle(struct kernel *k, const struct request *req);

/* A reply to req on its channel; metadata (taken over, may be NULL) replaces
 * the default {}. */
void outbox_reply(struct kernel *k, const struct request *req, const char *msg_type,
                  json_t **content, json_t *metadata);

/* An error reply to req ("<type>_reply", status error, ename, evalue, an empty
 * traceback; for an execute_request also its execution count). */
void outbox_error(struct kernel *k, const struct request *req, const char *ename,
                  const char *evalue);

/* The metadata of a reply that ipykernel sends: started, dependencies_met,
 * engine, status. New reference. */
json_t *outbox_reply_metadata(struct kernel *k, const char *status);

/* An iopub event parented to parent_header (borrowed; NULL: none). */
void outbox_publish(struct kernel *k, const json_t *parent_header, const char *msg_type,
                    json_t **content);

/* An iopub event as the worker made it: metadata (borrowed, may be NULL) and
 * binary buffers (borrowed) as well. */
void outbox_publish_full(struct kernel *k, const json_t *parent_header,
                         const char *msg_type, json_t **content, const json_t *metadata,
                         const struct wire_frame *buffers, size_t nbuffers);

/* An input_request for req on the stdin channel, routed to the client that
 * sent req. Writes the new message's msg_id into id (the parent of the
 * client's input_reply). 0 or -errno. */
int outbox_input_request(struct kernel *k, const struct request *req, json_t **content,
                         char *id, size_t idlen);

#endif
