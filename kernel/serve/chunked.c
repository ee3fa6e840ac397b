/* chunked: the chunked request body's decoder (chunked.h).
 *
 * One byte at a time through the framing, a block at a time through the
 * data: a state machine that can stop anywhere (a piece from lws may end in
 * the middle of a size line, a CRLF or a chunk) and go on with the next
 * piece. The hard part is refusing what a lax decoder would take: a size
 * with no digits or too many, a bare LF, a control character in an
 * extension, trailers without end. */
#include "kernel/serve/chunked.h"

#include <errno.h>
#include <string.h>

enum {
    CH_SIZE,       /* hex digits of a chunk's size */
    CH_EXT,        /* ";name=value" extensions (ignored) up to CR */
    CH_SIZE_LF,    /* the LF that ends the size line */
    CH_DATA,       /* the chunk's bytes */
    CH_DATA_CR,    /* the CRLF after them */
    CH_DATA_LF,    /* ... */
    CH_TRAILER_AT, /* the start of a trailer line, or the final CRLF */
    CH_TRAILER,    /* a trailer line (ignored) up to CR */
    CH_TRAILER_LF, /* its LF */
    CH_FINAL_LF,   /* the LF of the empty line that ends the body */
    CH_DONE,
    CH_REFUSED,
};

void chunked_init(struct chunked *c)
{
    memset(c, 0, sizeof *c);
    c->state = CH_SIZE;
}

bool chunked_done(const struct chunked *c)
{
    return c->state == CH_DONE;
}

static int refuse(struct chunked *c, const char *why)
{
    c->state = CH_REFUSED;
    c->error = why;
    return -EINVAL;
}

static int hex_value(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* A byte of the size line: its digits, then extensions, then CR. */
static int size_byte(struct chunked *c, unsigned char ch)
{
    if (++c->line > CHUNKED_MAX_LINE)
        return refuse(c, "a chunk's size line is too long");
    int v = c->state == CH_SIZE ? hex_value(ch) : -1;
    if (v >= 0) {
        if (++c->digits > 16)
            return refuse(c, "a chunk's size has too many digits");
        c->remain = c->remain << 4 | (uint64_t)v;
        return 0;
    }
    if (ch == '\r') {
        if (!c->digits)
            return refuse(c, "a chunk's size line has no size");
        c->state = CH_SIZE_LF;
        return 0;
    }
    if (c->state == CH_SIZE && !c->digits)
        return refuse(c, "a chunk's size is not hexadecimal");
    if (c->state == CH_SIZE && ch != ';' && ch != ' ' && ch != '\t')
        return refuse(c, "a chunk's size is not hexadecimal");
    if (ch != '\t' && (ch < 0x20 || ch == 0x7f))
        return refuse(c, "a control character in a chunk extension");
    c->state = CH_EXT;
    return 0;
}

static int expect(struct chunked *c, unsigned char ch, unsigned char want, int next)
{
    if (ch != want)
        return refuse(c, "the chunked framing lacks a CRLF");
    c->state = next;
    return 0;
}

/* One byte of framing (any state but CH_DATA). 0 or -EINVAL. */
static int framing_byte(struct chunked *c, unsigned char ch)
{
    switch (c->state) {
    case CH_SIZE:
    case CH_EXT:
        return size_byte(c, ch);
    case CH_SIZE_LF:
        if (expect(c, ch, '\n', c->remain ? CH_DATA : CH_TRAILER_AT))
            return -EINVAL;
        c->digits = 0;
        c->line = 0;
        return 0;
    case CH_DATA_CR:
        return expect(c, ch, '\r', CH_DATA_LF);
    case CH_DATA_LF:
        return expect(c, ch, '\n', CH_SIZE);
    case CH_TRAILER_AT:
    case CH_TRAILER:
        if (++c->trailers > CHUNKED_MAX_TRAILERS)
            return refuse(c, "the chunked trailers are too long");
        if (ch == '\r') {
            c->state = c->state == CH_TRAILER_AT ? CH_FINAL_LF : CH_TRAILER_LF;
            return 0;
        }
        if (ch == '\n')
            return refuse(c, "the chunked framing lacks a CRLF");
        c->state = CH_TRAILER;
        return 0;
    case CH_TRAILER_LF:
        return expect(c, ch, '\n', CH_TRAILER_AT);
    case CH_FINAL_LF:
        return expect(c, ch, '\n', CH_DONE);
    default:
        return refuse(c, c->error ? c->error : "the chunked body was refused");
    }
}

int chunked_decode(struct chunked *c, const char *in, size_t len, char *out,
                   size_t *out_len, size_t *used)
{
    size_t i = 0, o = 0;
    int rc = 0;
    if (c->state == CH_REFUSED)
        rc = -EINVAL;
    while (!rc && i < len && c->state != CH_DONE) {
        if (c->state == CH_DATA) {
            size_t n = len - i;
            if ((uint64_t)n > c->remain)
                n = (size_t)c->remain;
            memmove(out + o, in + i, n);
            o += n;
            i += n;
            c->remain -= n;
            if (!c->remain)
                c->state = CH_DATA_CR;
            continue;
        }
        rc = framing_byte(c, (unsigned char)in[i++]);
    }
    *out_len = o;
    *used = i;
    return rc;
}
