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

/* The largest frame a reader keeps after a large one has passed: beyond it, an
 * empty reader gives its buffer back (link_reader_shrink). */
#define LINK_READER_KEEP (256u << 10)

struct link_reader {
    unsigned char *buf;
    size_t off, len, cap; /* unread bytes are buf[off, len) */
    size_t max_frame;     /* larger frames are refused (-EMSGSIZE); 0: LINK_MAX_FRAME */
};

void link_reader_init(struct link_reader *r);
void link_reader_release(struct link_reader *r);

/* Refuses frames whose body is longer than max bytes (0: only LINK_MAX_FRAME). */
void link_reader_set_max(struct link_reader *r, size_t max);

/* Gives the buffer back when nothing is left unread in it and it has grown past
 * LINK_READER_KEEP (after a large frame). Returns the bytes freed. */
size_t link_reader_shrink(struct link_reader *r);

/* Reads once from fd into the reader. Returns bytes read (> 0), 0 at end of
 * stream, or -errno (-EAGAIN when a non-blocking fd has nothing, -EINTR). */
ssize_t link_reader_fill(struct link_reader *r, int fd);

/* Moves the next complete frame into *out (caller releases). Returns 1 when a
 * frame was taken, 0 when none is complete yet, -EBADMSG for a corrupt stream, or
 * -EMSGSIZE (as soon as its length is read, before its body is buffered) for a
 * frame longer than the reader's max_frame; link_reader_pending_size then says
 * how long. Both leave the stream unusable. */
int link_reader_next(struct link_reader *r, struct link_frame *out);

/* The length the next frame announces (its body), or 0 if not yet known. */
size_t link_reader_pending_size(const struct link_reader *r);

/* Encodes a frame into a new buffer (*out, caller frees). 0, -E2BIG, -ENOMEM. */
int link_encode(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers, unsigned char **out, size_t *out_len);

/* Writes all of data to a blocking fd, retrying short writes and EINTR.
 * 0 or -errno (-EPIPE when the other end is gone). */
int link_write_all(int fd, const void *data, size_t len);

/* Writes a frame to a blocking fd as link_encode would encode it, from where its
 * parts are (the lengths and the parts in one writev), without copying them.
 * 0, -E2BIG, or -errno as link_write_all. */
int link_write_frame(int fd, const char *json, size_t json_len,
                     const struct wire_frame *buffers, size_t nbuffers);

/* The largest frame the worker may send, given the kernel's output caps (bytes of
 * text and of images per request; 0: none): room for the capped output however
 * JSON escapes it, and a margin for the rest of the frame; without caps,
 * LINK_WORKER_FRAME_MAX. A larger frame is refused by the worker's runtime before it
 * is sent, and ends a worker that sends it anyway. */
#define LINK_WORKER_FRAME_MAX    (64u << 20)
#define LINK_WORKER_FRAME_MARGIN (4u << 20)
size_t link_worker_frame_limit(unsigned long max_output, unsigned long max_images);

#endif
