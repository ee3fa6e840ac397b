/* msg: a Jupyter message as JSON values, parsed from and serialised to frames.
 * Second step of the data flow (after wire): msg_parse verifies the signature
 * and parses the four JSON parts; msg_make builds a reply or an event with a
 * fresh header; msg_serialize signs it back into frames. A struct msg owns its
 * identities, JSON values and buffers. */
#ifndef SANDPIT_MSG_H
#define SANDPIT_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/sign.h"
#include "protocol/wire.h"

#define MSG_PROTOCOL_VERSION "5.5"
/* Arrays and objects nested deeper than this in any part are refused: the worker's
 * json.loads gives up near 1,000 levels, and no client sends more than a few dozen. */
#define MSG_MAX_DEPTH 256

/* Who the kernel is on the wire: its session id and username, and a counter
 * that makes message ids unique within the session. */
struct msg_session {
    char session[40];
    char username[64];
    unsigned long long counter;
    long pid;
};

/* Fills s with a random session id (UUID 4) and the username. Returns 0 or -errno. */
int msg_session_init(struct msg_session *s, const char *username);

struct msg {
    struct wire_frame *idents; /* routing identities, owned */
    size_t nidents;
    json_t *header; /* objects, owned references */
    json_t *parent_header;
    json_t *metadata;
    json_t *content;
    struct wire_frame *buffers; /* owned */
    size_t nbuffers;
};

void msg_free(struct msg *m);

/* Verifies and parses a received frame list; s remembers the signature, so that the
 * same message is refused if it comes again. On success *out is a new msg (caller
 * frees). Errors, each with a sentence in err:
 *   -EBADMSG   not a message: bad framing, or a header that cannot be read;
 *   -EACCES    a bad or missing signature;
 *   -EALREADY  a signature accepted before: a replayed message;
 *   -EPROTO    a well-signed message with a readable header whose other parts are
 *              not JSON objects (invalid UTF-8, \u0000, a lone surrogate, nesting
 *              deeper than MSG_MAX_DEPTH): *out is then a new msg with the header
 *              and identities and empty parent_header, metadata and content, so
 *              that the caller can send an error reply;
 *   -ENOMEM.
 * On any other error *out is NULL. */
int msg_parse(const struct wire_frame *frames, size_t n, struct sign *s, struct msg **out,
              char *err, size_t errlen);

/* msg_parse, with MSG_PARSE_LARGE: the large strings of parent_header, metadata
 * and content are decoded by load_part (protocol/load.h) rather than jansson,
 * which accepts and refuses the same messages, faster when they carry large
 * outputs. The clients use it; the supervisor keeps jansson alone. */
#define MSG_PARSE_LARGE 1u
int msg_parse_with(const struct wire_frame *frames, size_t n, struct sign *s,
                   unsigned flags, struct msg **out, char *err, size_t errlen);

/* The header's msg_type or msg_id ("" when absent); borrowed from m. */
const char *msg_type(const struct msg *m);
const char *msg_id(const struct msg *m);

/* A new message of msg_type with a fresh header from s. With a parent, its
 * header becomes parent_header and, when route is true, its identities are
 * copied so the message goes back to the sender. Takes over *content (NULL
 * means {}) and sets *content to NULL on every path. NULL on failure. */
struct msg *msg_make(struct msg_session *s, const char *msg_type,
                     const struct msg *parent, json_t **content, bool route);

/* Appends an identity (a routing frame, or an iopub topic). 0 or -ENOMEM. */
int msg_add_ident(struct msg *m, const void *data, size_t len);

/* Appends a buffer (copied). 0 or -ENOMEM. */
int msg_add_buffer(struct msg *m, const void *data, size_t len);

/* Serialises and signs m. On success *frames is a new array of owned frames
 * (free with wire_frames_free) and *n its length. 0, -ENOMEM or -EIO. */
int msg_serialize(const struct msg *m, const struct sign *s, struct wire_frame **frames,
                  size_t *n);

/* Writes the current time as ISO 8601 UTC with microseconds
 * ("2024-01-02T03:04:05.000006Z") into buf, which holds at least 32 bytes. */
void msg_date_now(char *buf, size_t len);

#endif
