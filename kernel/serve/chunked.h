/* chunked: the decoder of a request body sent with "Transfer-Encoding:
 * chunked" (RFC 9112, 7.1). libwebsockets 4.1.6 does not decode one: a
 * POST without Content-Length reaches http.c as the raw chunk framing, and
 * lws never reports the body's end. http.c feeds each piece here, keeps the
 * data, and ends the body when the last chunk and its trailers have come.
 * Hostile input: sizes are bounded (no overflow), lines and trailers too,
 * framing must be exact (CRLF). Pure: no I/O, no allocation; the state is
 * the caller's (embedded, chunked_init). */
#ifndef SANDPIT_SERVE_CHUNKED_H
#define SANDPIT_SERVE_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNKED_MAX_LINE     1024 /* bytes of a size line with its extensions */
#define CHUNKED_MAX_TRAILERS 8192 /* bytes of all trailer lines together */

struct chunked {
    int state;
    uint64_t remain;   /* bytes of the current chunk still to come */
    unsigned digits;   /* hex digits read of the size */
    size_t line;       /* bytes of the current size line */
    size_t trailers;   /* bytes of trailers read */
    const char *error; /* why the framing was refused (static) */
};

void chunked_init(struct chunked *c);

/* Decodes len bytes of in, writing the chunks' data to out (room for len
 * bytes; out may be in itself: data never moves forward). *out_len is the
 * data written, *used the bytes of in consumed (less than len only once the
 * body has ended: what follows is not the body's). 0, or -EINVAL with
 * c->error saying why (then the decoder stays refused). */
int chunked_decode(struct chunked *c, const char *in, size_t len, char *out,
                   size_t *out_len, size_t *used);

/* Whether the last chunk and the trailers have come. */
bool chunked_done(const struct chunked *c);

#endif
