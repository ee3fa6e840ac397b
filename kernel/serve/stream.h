/* stream: an HTTP answer written over time (NDJSON lines, server-sent
 * events), for a handler that cannot know its whole body at once. The
 * handler sets stream_open in its struct routes_resp (with the status and
 * the content type, no body); http.c writes the headers, with the body in
 * HTTP/1.1 chunks, and calls stream_open with the stream, which the handler
 * then owns the writing end of: it writes, and ends. The bytes wait in the
 * stream, within STREAM_MAX_QUEUED, until the socket takes them: a client
 * that reads too slowly is cut off (-ENOBUFS) rather than queued without
 * end. A client that goes away (or a server that stops) before the end is
 * told to the handler once, through the function it gave; from then on, as
 * after http_stream_end, the stream is not the handler's to touch. */
#ifndef SANDPIT_SERVE_STREAM_H
#define SANDPIT_SERVE_STREAM_H

#include <libwebsockets.h>
#include <stddef.h>

#define STREAM_MAX_QUEUED (16u << 20) /* bytes waiting for a slow client */
#define STREAM_CHUNK      (64u << 10) /* bytes of one chunk on the wire */

struct http_stream;

/* Queues len bytes of data (len 0 does nothing). 0; -ENOBUFS when the queue
 * would pass STREAM_MAX_QUEUED (the connection is then ended, and the gone
 * function called); -EPIPE after the end or the client's going; -ENOMEM. */
int http_stream_write(struct http_stream *st, const void *data, size_t len);

/* What was queued goes, then the answer ends (the connection stays open for
 * the client's next request). st is not to be used after. */
void http_stream_end(struct http_stream *st);

/* fn(arg) is called once if the client goes before http_stream_end; NULL
 * for none. */
void http_stream_on_gone(struct http_stream *st, void (*fn)(void *arg), void *arg);

/* For http.c. */
struct http_stream *stream_new(struct lws *wsi);
/* The writable turn: writes a chunk, or the end. 0, or -1 to close. */
int stream_writable(struct http_stream *st, int *finished);
/* The connection has gone: the handler is told unless it has ended. Frees. */
void stream_gone(struct http_stream *st);

#endif
