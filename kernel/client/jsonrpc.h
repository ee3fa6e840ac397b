/* jsonrpc: JSON-RPC 2.0 messages over a pair of descriptors, one message a
 * line, as MCP's stdio transport carries them. It reads without blocking
 * (the caller polls the descriptor along with its other work) and writes
 * whole lines. Messages it returns are new references (caller releases). */
#ifndef SANDPIT_JSONRPC_H
#define SANDPIT_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JSONRPC_PARSE_ERROR      -32700
#define JSONRPC_INVALID_REQUEST  -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS   -32602
#define JSONRPC_INTERNAL_ERROR   -32603
#define JSONRPC_MAX_LINE         (32u << 20) /* bytes in one message */

struct jsonrpc {
    int in_fd, out_fd;
    char *buf; /* bytes read and not yet taken as lines */
    size_t len, cap;
    size_t max_line; /* bytes of one message: JSONRPC_MAX_LINE unless set after init */
    bool eof;
    bool empty;    /* the last fill found nothing to read (EAGAIN) */
    bool skipping; /* inside a line that was too long: dropped up to its end */
};

/* 0 or -ENOMEM; release frees the buffer. */
int jsonrpc_init(struct jsonrpc *j, int in_fd, int out_fd);
void jsonrpc_release(struct jsonrpc *j);

/* Reads what is available on in_fd (one read). 0, or -errno; sets j->eof at
 * the end of input, and j->empty when there was nothing to read. */
int jsonrpc_fill(struct jsonrpc *j);

/* Takes the next complete line from the buffer. Returns 1 with *out a new
 * JSON value, 0 when no complete line is buffered, or JSONRPC_PARSE_ERROR
 * (the line was not JSON, or too long, and has been dropped). Blank lines are
 * skipped. */
int jsonrpc_next(struct jsonrpc *j, json_t **out);

/* Writes one message as a line. Takes over *msg and sets it to NULL. */
int jsonrpc_send(struct jsonrpc *j, json_t **msg);

/* {"jsonrpc":"2.0","id":id,"result":*result}; takes over *result. id is
 * borrowed. */
int jsonrpc_result(struct jsonrpc *j, json_t *id, json_t **result);

/* {"jsonrpc":"2.0","id":id,"error":{"code","message"}}; id may be NULL (sent
 * as null). */
int jsonrpc_error(struct jsonrpc *j, json_t *id, int code, const char *message);

/* A notification; takes over *params (NULL: none). */
int jsonrpc_notify(struct jsonrpc *j, const char *method, json_t **params);

#endif
