/* request: the life of one client request on the supervisor's side. Its
 * fields are filled by the modules that own each concern (shells.c, limits.c,
 * route.c); this file makes, names and frees it. */
#include "kernel/supervisor/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct request *request_new(struct msg **m, enum connection_channel ch)
{
    struct request *r = calloc(1, sizeof *r);
    if (!r) {
        msg_free(*m);
        *m = NULL;
        return NULL;
    }
    r->msg = *m;
    *m = NULL;
    r->channel = ch;
    r->execute = strcmp(msg_type(r->msg), "execute_request") == 0;
    return r;
}

void request_free(struct request *r)
{
    if (!r)
        return;
    msg_free(r->msg);
    free(r);
}

bool request_type_is_request(const char *msg_type)
{
    size_t n = strlen(msg_type);
    return n > 8 && strcmp(msg_type + n - 8, "_request") == 0;
}

bool request_has_reply(const struct request *r)
{
    return strncmp(msg_type(r->msg), "comm_", 5) != 0 ||
           strcmp(msg_type(r->msg), "comm_info_request") == 0;
}

const char *request_reply_type(const struct request *r, char *buf, size_t len)
{
    const char *t = msg_type(r->msg);
    if (request_type_is_request(t))
        snprintf(buf, len, "%.*s_reply", (int)(strlen(t) - 8), t);
    else
        snprintf(buf, len, "%s_reply", t);
    return buf;
}
