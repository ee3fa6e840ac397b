/* jsonrpc: line framing and the three kinds of message we send.
 *
 * The input is whatever the client writes: a line may arrive in pieces, two
 * lines in one read, or a line without end. Bytes are buffered up to the
 * bound (JSONRPC_MAX_LINE unless the caller sets another); a longer line is
 * dropped to its newline and answered with a parse error, so it can neither
 * exhaust memory nor desynchronise the lines that follow. Output is written whole with
 * the blocking write loop, which is right for a pipe whose reader is the client waiting
 * for it. */
#include "kernel/client/jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int jsonrpc_init(struct jsonrpc *j, int in_fd, int out_fd)
{
    memset(j, 0, sizeof *j);
    j->in_fd = in_fd;
    j->out_fd = out_fd;
    j->cap = 65536;
    j->max_line = JSONRPC_MAX_LINE;
    j->buf = malloc(j->cap);
    return j->buf ? 0 : -ENOMEM;
}

void jsonrpc_release(struct jsonrpc *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}

int jsonrpc_fill(struct jsonrpc *j)
{
    if (j->cap - j->len < 65536) {
        size_t most = j->max_line + 131072, ncap = j->cap * 2 < most ? j->cap * 2 : most;
        if (j->cap >= most) {
            /* Too long a line: keep nothing of it but the fact. */
            j->skipping = true;
            j->len = 0;
        } else {
            char *nb = realloc(j->buf, ncap);
            if (!nb)
                return -ENOMEM;
            j->buf = nb;
            j->cap = ncap;
        }
    }
    ssize_t n;
    while ((n = read(j->in_fd, j->buf + j->len, j->cap - j->len)) < 0 && errno == EINTR)
        ;
    j->empty = n < 0 && errno == EAGAIN;
    if (n < 0)
        return j->empty ? 0 : -errno;
    if (n == 0)
        j->eof = true;
    j->len += (size_t)n;
    return 0;
}

int jsonrpc_next(struct jsonrpc *j, json_t **out)
{
    *out = NULL;
    for (;;) {
        char *nl = memchr(j->buf, '\n', j->len);
        if (!nl)
            return 0;
        size_t n = (size_t)(nl - j->buf);
        bool skipped = j->skipping;
        j->skipping = false;
        json_t *v = NULL;
        bool blank = true;
        for (size_t i = 0; i < n && blank; i++)
            blank = j->buf[i] == ' ' || j->buf[i] == '\r' || j->buf[i] == '\t';
        if (!skipped && !blank)
            v = json_loadb(j->buf, n, JSON_REJECT_DUPLICATES, NULL);
        memmove(j->buf, nl + 1, j->len - n - 1);
        j->len -= n + 1;
        if (blank && !skipped)
            continue;
        if (!v)
            return JSONRPC_PARSE_ERROR;
        *out = v;
        return 1;
    }
}

int jsonrpc_send(struct jsonrpc *j, json_t **msg)
{
    char *text = *msg ? json_dumps(*msg, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(*msg);
    *msg = NULL;
    if (!text)
        return -ENOMEM;
    size_t len = strlen(text);
    text[len] = 0;
    int rc = 0;
    const char *p = text;
    size_t left = len;
    while (left) {
        ssize_t w = write(j->out_fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -errno;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    while (!rc && write(j->out_fd, "\n", 1) < 0)
        if (errno != EINTR)
            rc = -errno;
    free(text);
    return rc;
}

int jsonrpc_result(struct jsonrpc *j, json_t *id, json_t **result)
{
    json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
                          *result ? *result : json_object());
    *result = NULL;
    return jsonrpc_send(j, &m);
}

int jsonrpc_error(struct jsonrpc *j, json_t *id, int code, const char *message)
{
    json_t *m =
        json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                  id ? id : json_null(), "error", "code", code, "message", message);
    return jsonrpc_send(j, &m);
}

int jsonrpc_notify(struct jsonrpc *j, const char *method, json_t **params)
{
    json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (m && *params)
        json_object_set(m, "params", *params);
    json_decref(*params);
    *params = NULL;
    return jsonrpc_send(j, &m);
}
