/* resp: answers (resp.h). */
#include "kernel/serve/resp.h"

#include <string.h>

#include "kernel/serve/model.h"

void routes_error(struct routes_resp *out, int status, const char *message)
{
    json_decref(out->json);
    out->json = model_error(status, message);
    out->status = status;
}

bool resp_header_add(struct routes_resp *out, const char *name, const char *value)
{
    size_t len = strlen(value);
    if (out->nheaders >= RESP_MAX_HEADERS || len >= sizeof out->headers[0].value)
        return false;
    for (size_t i = 0; i < len; i++)
        if (value[i] < 0x20 || value[i] > 0x7e)
            return false; /* no header splitting */
    struct resp_header *h = &out->headers[out->nheaders++];
    h->name = name;
    memcpy(h->value, value, len + 1);
    return true;
}
