/* conns: connections per address (conns.h). The table is a list: the
 * addresses connected at once are few next to the bound on connections. */
#include "kernel/serve/conns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/server.h"
#include "kernel/util/log.h"

struct peer {
    char addr[64];
    int count;
    struct peer *next;
};

static struct peer *peers;

bool conns_handles(enum lws_callback_reasons reason)
{
    return reason == LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED ||
           reason == LWS_CALLBACK_WSI_DESTROY;
}

static struct peer *peer_for(const char *addr)
{
    for (struct peer *p = peers; p; p = p->next)
        if (strcmp(p->addr, addr) == 0)
            return p;
    struct peer *p = calloc(1, sizeof *p);
    if (p) {
        snprintf(p->addr, sizeof p->addr, "%s", addr);
        p->next = peers;
        peers = p;
    }
    return p;
}

static void peer_drop(struct peer *gone)
{
    if (--gone->count > 0)
        return;
    for (struct peer **p = &peers; *p; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            free(gone);
            return;
        }
}

int conns_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                   void *in, size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    const struct lws_protocols *proto = lws_get_protocol(wsi);
    if (proto && strcmp(proto->name, "sandpit-fd") == 0)
        return 0; /* the loop's own descriptors */
    if (reason == LWS_CALLBACK_WSI_DESTROY) {
        struct peer *p = lws_get_opaque_user_data(wsi);
        if (p) {
            lws_set_opaque_user_data(wsi, NULL);
            peer_drop(p);
        }
        return 0;
    }
    char addr[64] = "";
    lws_get_peer_simple(wsi, addr, sizeof addr);
    struct peer *p = peer_for(addr);
    if (!p)
        return -1;
    p->count++;
    lws_set_opaque_user_data(wsi, p);
    if (p->count > serve_of(wsi)->cfg.max_per_address) {
        log_warn("too many connections from one address: one closed");
        return -1;
    }
    return 0;
}
