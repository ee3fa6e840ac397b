/* wire: the frames of a Jupyter message on ZeroMQ.
 * First step of the data flow: a multipart message from a ROUTER socket is
 * split into identities, <IDS|MSG>, signature, the four JSON parts and extra
 * buffers. wire knows nothing of sockets; wire_split only borrows the frames. */
#ifndef SANDPIT_WIRE_H
#define SANDPIT_WIRE_H

#include <stddef.h>

#define WIRE_DELIM       "<IDS|MSG>"
#define WIRE_DELIM_LEN   9
#define WIRE_MAX_IDENTS  32          /* routing prefixes a message may carry */
#define WIRE_MAX_JSON    (64u << 20) /* bytes in one JSON part */
#define WIRE_MAX_BUFFERS 64          /* extra binary buffers */

enum wire_part { WIRE_HEADER, WIRE_PARENT, WIRE_METADATA, WIRE_CONTENT, WIRE_NPARTS };

/* A byte span. Whether data is owned depends on who made it: frames that
 * wire_split reads are borrowed; frames from msg_serialize are owned. */
struct wire_frame {
    void *data;
    size_t len;
};

/* A received message split into parts; every pointer borrows from the frames
 * given to wire_split, valid as long as they are. */
struct wire_parts {
    const struct wire_frame *idents;
    size_t nidents;
    const struct wire_frame *signature;
    const struct wire_frame *json[WIRE_NPARTS];
    const struct wire_frame *buffers;
    size_t nbuffers;
};

/* Splits frames into parts. Returns 0, or -EBADMSG with a sentence in err for
 * a frame list that is not a Jupyter message (no delimiter, too few frames,
 * too many identities or buffers, a JSON part over WIRE_MAX_JSON). */
int wire_split(const struct wire_frame *frames, size_t n, struct wire_parts *out,
               char *err, size_t errlen);

/* Frees an array of owned frames and their data; accepts NULL. */
void wire_frames_free(struct wire_frame *frames, size_t n);

#endif
