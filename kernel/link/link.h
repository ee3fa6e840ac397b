/* link: framed messages on the socketpair between supervisor and worker.
 * A frame is a JSON text plus optional binary buffers:
 *     u32 body length | u32 JSON length | JSON | (u32 length | bytes)*
 * (native byte order: both ends are the same binary on the same machine).
 * The reader owns its buffer; frames it hands out own their memory. The
 * supervisor treats everything the worker sends as untrusted input. */
#ifndef SANDPIT_LINK_H
#define SANDPIT_LINK_H

#include <stddef.h>
#include <sys/types.h>

#include "protocol/wire.h"

#define LINK_MAX_FRAME                                                                   \
    (512u << 20) /* a frame larger than this means a corrupt stream                      \
                  */
#define LINK_MAX_BUFFERS WIRE_MAX_BUFFERS

struct link_frame {
    char *json; /* NUL-terminated, json_len bytes */
    size_t json_len;
    struct wire_frame *buffers;
    size_t nbuffers;
};

void link_frame_release(struct link_frame *f);

struct link_reader {
    unsigned char *buf;
    size_t off, len, cap; /* unread bytes are buf[off, len) */
};

void link_reader_init(struct link_reader *r);
void link_reader_release(struct link_reader *r);

/* Reads once from fd into the reader. Returns bytes read (> 0), 0 at end of
 * stream, or -errno (-EAGAIN when a non-blocking fd has nothing, -EINTR). */
ssize_t link_reader_fill(struct link_reader *r, int fd);

/* Moves the next complete frame into *out (caller releases). Returns 1 when a
 * frame was taken, 0 when none is complete yet, -EBADMSG for a corrupt stream. */
int link_reader_next(struct link_reader *r, struct link_frame *out);

/* Encodes a frame into a new buffer (*out, caller frees). 0, -E2BIG, -ENOMEM. */
int link_encode(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers, unsigned char **out, size_t *out_len);

/* Writes all of data to a blocking fd, retrying short writes and EINTR.
 * 0 or -errno (-EPIPE when the other end is gone). */
int link_write_all(int fd, const void *data, size_t len);

#endif
