/* link: length-prefixed frames over a stream socket.
 *
 * A stream rather than SOCK_SEQPACKET because a display of a large chart can
 * be many megabytes, more than a datagram may hold. The reader accepts partial
 * reads and hands out whole frames; a length over LINK_MAX_FRAME or a body
 * whose inner lengths do not add up is reported as a corrupt stream, and the
 * supervisor then treats the worker as broken. The supervisor's reader also has
 * a bound of its own, far below LINK_MAX_FRAME (link_worker_frame_limit): a frame
 * that announces more is refused from its first four bytes, so the worker cannot
 * make the supervisor hold its memory. */
#include "kernel/link/link.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/mem/prefault.h"

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

void link_frame_release(struct link_frame *f)
{
    free(f->json);
    wire_frames_free(f->buffers, f->nbuffers);
    memset(f, 0, sizeof *f);
}

void link_reader_init(struct link_reader *r)
{
    memset(r, 0, sizeof *r);
}

void link_reader_release(struct link_reader *r)
{
    free(r->buf);
    link_reader_init(r);
}

void link_reader_set_max(struct link_reader *r, size_t max)
{
    r->max_frame = max;
}

size_t link_reader_shrink(struct link_reader *r)
{
    if (r->off != r->len || r->cap <= LINK_READER_KEEP)
        return 0;
    size_t freed = r->cap;
    free(r->buf);
    r->buf = NULL;
    r->off = r->len = r->cap = 0;
    return freed;
}

size_t link_reader_pending_size(const struct link_reader *r)
{
    return r->len - r->off >= 4 ? get_u32(r->buf + r->off) : 0;
}

ssize_t link_reader_fill(struct link_reader *r, int fd)
{
    if (r->off && r->cap - r->len < 65536) {
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (r->cap - r->len < 65536) {
        size_t ncap = r->cap ? r->cap * 2 : 131072;
        /* A large frame whose length has come: room for all of it at once,
         * rather than a copy at each doubling (a frame over the limit is
         * refused by link_reader_next, and gets no room here). */
        size_t body = link_reader_pending_size(r);
        size_t limit = r->max_frame ? r->max_frame : LINK_MAX_FRAME;
        if (body <= limit && r->off + 4 + (size_t)body + 65536 > ncap)
            ncap = r->off + 4 + (size_t)body + 65536;
        while (ncap - r->len < 65536)
            ncap *= 2;
        unsigned char *nb = realloc(r->buf, ncap);
        if (!nb)
            return -ENOMEM;
        if (ncap - r->len >= PREFAULT_LARGE)
            prefault_range(nb + r->len, ncap - r->len);
        r->buf = nb;
        r->cap = ncap;
    }
    ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
    if (n < 0)
        return -errno;
    r->len += (size_t)n;
    return n;
}

int link_reader_next(struct link_reader *r, struct link_frame *out)
{
    memset(out, 0, sizeof *out);
    size_t avail = r->len - r->off;
    if (avail < 4)
        return 0;
    uint32_t body = get_u32(r->buf + r->off);
    if (body > LINK_MAX_FRAME || body < 4)
        return -EBADMSG;
    if (r->max_frame && body > r->max_frame)
        return -EMSGSIZE;
    if (avail < 4 + (size_t)body)
        return 0;
    const unsigned char *p = r->buf + r->off + 4, *end = p + body;
    uint32_t jlen = get_u32(p);
    p += 4;
    if (jlen > (size_t)(end - p))
        return -EBADMSG;
    int rc = -ENOMEM;
    out->json = prefault_malloc(jlen + 1);
    if (!out->json)
        goto fail;
    memcpy(out->json, p, jlen);
    out->json[jlen] = 0;
    out->json_len = jlen;
    p += jlen;
    while (p < end) {
        rc = -EBADMSG;
        if (end - p < 4 || out->nbuffers >= LINK_MAX_BUFFERS)
            goto fail;
        uint32_t blen = get_u32(p);
        p += 4;
        if (blen > (size_t)(end - p))
            goto fail;
        rc = -ENOMEM;
        struct wire_frame *nb =
            realloc(out->buffers, (out->nbuffers + 1) * sizeof *out->buffers);
        if (!nb)
            goto fail;
        out->buffers = nb;
        nb[out->nbuffers].data = prefault_malloc(blen ? blen : 1);
        if (!nb[out->nbuffers].data)
            goto fail;
        memcpy(nb[out->nbuffers].data, p, blen);
        nb[out->nbuffers].len = blen;
        out->nbuffers++;
        p += blen;
    }
    r->off += 4 + body;
    if (r->off == r->len)
        r->off = r->len = 0;
    return 1;
fail:
    link_frame_release(out);
    return rc;
}

int link_encode(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers, unsigned char **out, size_t *out_len)
{
    *out = NULL;
    size_t body = 4 + json_len;
    for (size_t i = 0; i < nbuffers; i++)
        body += 4 + buffers[i].len;
    if (body > LINK_MAX_FRAME || nbuffers > LINK_MAX_BUFFERS)
        return -E2BIG;
    unsigned char *b = malloc(4 + body);
    if (!b)
        return -ENOMEM;
    unsigned char *p = b;
    put_u32(p, (uint32_t)body);
    put_u32(p + 4, (uint32_t)json_len);
    memcpy(p + 8, json, json_len);
    p += 8 + json_len;
    for (size_t i = 0; i < nbuffers; i++) {
        put_u32(p, (uint32_t)buffers[i].len);
        if (buffers[i].len)
            memcpy(p + 4, buffers[i].data, buffers[i].len);
        p += 4 + buffers[i].len;
    }
    *out = b;
    *out_len = 4 + body;
    return 0;
}

int link_write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int link_write_frame(int fd, const char *json, size_t json_len,
                     const struct wire_frame *buffers, size_t nbuffers)
{
    size_t body = 4 + json_len;
    for (size_t i = 0; i < nbuffers; i++)
        body += 4 + buffers[i].len;
    if (body > LINK_MAX_FRAME || nbuffers > LINK_MAX_BUFFERS)
        return -E2BIG;
    unsigned char lens[4 * (2 + LINK_MAX_BUFFERS)];
    struct iovec iov[2 + 2 * LINK_MAX_BUFFERS];
    int n = 0;
    put_u32(lens, (uint32_t)body);
    put_u32(lens + 4, (uint32_t)json_len);
    iov[n++] = (struct iovec){lens, 8};
    iov[n++] = (struct iovec){(void *)json, json_len};
    for (size_t i = 0; i < nbuffers; i++) {
        put_u32(lens + 8 + 4 * i, (uint32_t)buffers[i].len);
        iov[n++] = (struct iovec){lens + 8 + 4 * i, 4};
        iov[n++] = (struct iovec){buffers[i].data, buffers[i].len};
    }
    struct iovec *v = iov;
    while (n) {
        ssize_t w = writev(fd, v, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        while (n && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            n--;
        }
        if (n) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
    return 0;
}

size_t link_worker_frame_limit(unsigned long max_output, unsigned long max_images)
{
    if (!max_output && !max_images)
        return LINK_WORKER_FRAME_MAX;
    /* A character of text may take six bytes in JSON (\u0001); images are base64,
     * which JSON does not escape. A cap that is off leaves the fixed bound for its
     * kind of output. */
    unsigned long long text = max_output ? 6ull * max_output : LINK_WORKER_FRAME_MAX;
    unsigned long long images = max_images ? max_images : LINK_WORKER_FRAME_MAX;
    unsigned long long limit = text + images + LINK_WORKER_FRAME_MARGIN;
    return limit > LINK_MAX_FRAME ? LINK_MAX_FRAME : (size_t)limit;
}
