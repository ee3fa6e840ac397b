/* request: a request's headers and query arguments by name (request.h). */
#include "kernel/serve/request.h"

#include <stdlib.h>
#include <string.h>

#define REQUEST_MAX_ARGS 64 /* query arguments looked through */

/* The index of the header lws knows by name, or -1 (a custom header). */
static int token_of(const char *name)
{
    for (int t = 0; t < WSI_TOKEN_COUNT; t++) {
        const unsigned char *n = lws_token_to_string((enum lws_token_indexes)t);
        if (n && strcmp((const char *)n, name) == 0)
            return t;
    }
    return -1;
}

int serve_request_header(const struct serve_request *rq, const char *name, char *buf,
                         size_t len)
{
    if (!rq->wsi || !len || len > 65536)
        return 0;
    buf[0] = 0;
    int t = token_of(name), n, got;
    int nlen = (int)strlen(name);
    n = t >= 0 ? lws_hdr_total_length(rq->wsi, (enum lws_token_indexes)t)
               : lws_hdr_custom_length(rq->wsi, name, nlen);
    if (n <= 0)
        return 0;
    if ((size_t)n >= len)
        return -1;
    got = t >= 0 ? lws_hdr_copy(rq->wsi, buf, (int)len, (enum lws_token_indexes)t)
                 : lws_hdr_custom_copy(rq->wsi, buf, (int)len, name, nlen);
    if (got != n) {
        buf[0] = 0;
        return 0;
    }
    return 1;
}

bool serve_request_query(const struct serve_request *rq, const char *name, char *buf,
                         size_t len)
{
    if (!rq->wsi || !len || len > 65536)
        return false;
    size_t nlen = strlen(name), cap = nlen + len;
    char *frag = malloc(cap);
    bool found = false;
    for (int i = 0; frag && !found && i < REQUEST_MAX_ARGS; i++) {
        int n =
            lws_hdr_copy_fragment(rq->wsi, frag, (int)cap, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n < 0 && lws_hdr_fragment_length(rq->wsi, WSI_TOKEN_HTTP_URI_ARGS, i) <= 0)
            break; /* no more arguments */
        if (n < 0 || (size_t)n < nlen || strncmp(frag, name, nlen) != 0)
            continue; /* another argument, or this one too long to hand on */
        memcpy(buf, frag + nlen, (size_t)n - nlen + 1);
        found = true;
    }
    free(frag);
    return found;
}
