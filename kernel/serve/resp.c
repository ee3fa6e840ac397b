/* resp: answers (resp.h). */
#include "kernel/serve/resp.h"

#include <string.h>

#include "kernel/serve/model.h"

json_t *resp_body_object(const char *body, size_t len, struct routes_resp *out)
{
    if (!len)
        return json_object();
    json_error_t e;
    json_t *v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
    if (!json_is_object(v)) {
        json_decref(v);
        routes_error(out, 400, "the body is not a JSON object");
        return NULL;
    }
    return v;
}

void resp_json(struct routes_resp *out, int status, json_t *json)
{
    json_decref(out->json);
    out->status = json ? status : 500;
    out->json = json ? json : model_error(500, "out of memory");
}

int resp_split_path(const char *path, char *buf, size_t len, char **seg, int max)
{
    size_t plen = strlen(path);
    if (plen >= len || path[0] != '/')
        return -1;
    memcpy(buf, path, plen + 1);
    if (plen > 1 && buf[plen - 1] == '/')
        buf[--plen] = 0;
    int n = 0;
    for (char *p = buf + 1; *p;) {
        char *slash = strchr(p, '/');
        if (slash)
            *slash = 0;
        if (!*p || strcmp(p, ".") == 0 || strcmp(p, "..") == 0 || n == max)
            return -1;
        seg[n++] = p;
        if (!slash)
            break;
        p = slash + 1;
        if (!*p)
            return -1;
    }
    return n;
}

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
