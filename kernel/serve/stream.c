/* stream: an answer written over time (stream.h).
 *
 * The body goes in HTTP/1.1 chunks framed here ("<hex length>\r\n", the
 * bytes, "\r\n"; the end is "0\r\n\r\n"), so that the connection outlives
 * the answer. What the handler writes waits in one buffer, consumed from
 * its front; a writable turn takes at most STREAM_CHUNK bytes of it. */
#include "kernel/serve/stream.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct http_stream {
    struct lws *wsi;
    unsigned char *queue;
    size_t start, len, cap;
    unsigned char *wire; /* LWS_PRE, a chunk's head, the chunk, its tail */
    bool ended, closing;
    void (*gone_fn)(void *arg);
    void *gone_arg;
};

#define CHUNK_HEAD 12 /* "%zx\r\n" of at most STREAM_CHUNK */

struct http_stream *stream_new(struct lws *wsi)
{
    struct http_stream *st = calloc(1, sizeof *st);
    if (st)
        st->wsi = wsi;
    return st;
}

static int make_room(struct http_stream *st, size_t len)
{
    if (st->start && st->start + st->len + len > st->cap) {
        memmove(st->queue, st->queue + st->start, st->len);
        st->start = 0;
    }
    if (st->len + len <= st->cap)
        return 0;
    size_t cap = st->cap ? st->cap : 4096;
    while (cap < st->len + len)
        cap *= 2;
    unsigned char *q = realloc(st->queue, cap);
    if (!q)
        return -ENOMEM;
    st->queue = q;
    st->cap = cap;
    return 0;
}

int http_stream_write(struct http_stream *st, const void *data, size_t len)
{
    if (st->ended || st->closing)
        return -EPIPE;
    if (!len)
        return 0;
    if (len > STREAM_MAX_QUEUED || st->len + len > STREAM_MAX_QUEUED) {
        st->closing = true; /* the client does not read: it is cut off */
        lws_set_timeout(st->wsi, PENDING_TIMEOUT_HTTP_CONTENT, LWS_TO_KILL_ASYNC);
        return -ENOBUFS;
    }
    int rc = make_room(st, len);
    if (rc)
        return rc;
    memcpy(st->queue + st->start + st->len, data, len);
    st->len += len;
    lws_callback_on_writable(st->wsi);
    return 0;
}

void http_stream_end(struct http_stream *st)
{
    st->ended = true;
    st->gone_fn = NULL;
    lws_callback_on_writable(st->wsi);
}

void http_stream_on_gone(struct http_stream *st, void (*fn)(void *arg), void *arg)
{
    st->gone_fn = fn;
    st->gone_arg = arg;
}

int stream_writable(struct http_stream *st, int *finished)
{
    *finished = 0;
    if (st->closing)
        return -1;
    if (!st->wire && !(st->wire = malloc(LWS_PRE + CHUNK_HEAD + STREAM_CHUNK + 8)))
        return -1;
    unsigned char *p = st->wire + LWS_PRE;
    if (!st->len) {
        if (!st->ended)
            return 0;
        memcpy(p, "0\r\n\r\n", 5);
        *finished = 1;
        return lws_write(st->wsi, p, 5, LWS_WRITE_HTTP_FINAL) < 0 ? -1 : 0;
    }
    size_t n = st->len < STREAM_CHUNK ? st->len : STREAM_CHUNK;
    int head = snprintf((char *)p, CHUNK_HEAD, "%zx\r\n", n);
    memcpy(p + head, st->queue + st->start, n);
    memcpy(p + head + n, "\r\n", 2);
    st->start += n;
    st->len -= n;
    if (lws_write(st->wsi, p, (size_t)head + n + 2, LWS_WRITE_HTTP) < 0)
        return -1;
    if (st->len || st->ended)
        lws_callback_on_writable(st->wsi);
    return 0;
}

void stream_gone(struct http_stream *st)
{
    if (!st)
        return;
    void (*fn)(void *) = st->ended ? NULL : st->gone_fn;
    void *arg = st->gone_arg;
    free(st->queue);
    free(st->wire);
    free(st);
    if (fn)
        fn(arg);
}
