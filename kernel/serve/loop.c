/* loop: other descriptors in lws's loop (loop.h).
 *
 * A watch may end while lws is inside its callback (a kernel that exits
 * ends its own watches), so nothing is freed under lws: the watch forgets
 * its wsi's user data and asks lws to close the wsi at its next turn. */
#include "kernel/serve/loop.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct loop_watch {
    struct lws *wsi;
    void (*fn)(void *arg);
    void *arg;
};

struct loop_watch *loop_watch(struct lws_vhost *vh, int fd, void (*fn)(void *arg),
                              void *arg)
{
    struct loop_watch *w = calloc(1, sizeof *w);
    int copy = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
    if (!w || copy < 0)
        goto fail;
    lws_sock_file_fd_type d;
    d.filefd = copy;
    w->fn = fn;
    w->arg = arg;
    if (!(w->wsi = lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, d,
                                              LOOP_PROTOCOL, NULL)))
        goto fail;
    lws_set_opaque_user_data(w->wsi, w);
    return w;
fail:
    if (copy >= 0)
        close(copy);
    free(w);
    return NULL;
}

void loop_unwatch(struct loop_watch **wp)
{
    struct loop_watch *w = *wp;
    *wp = NULL;
    if (!w)
        return;
    if (w->wsi) {
        lws_set_opaque_user_data(w->wsi, NULL);
        lws_set_timeout(w->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
    }
    free(w);
}

int loop_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    struct loop_watch *w = lws_get_opaque_user_data(wsi);
    switch (reason) {
    case LWS_CALLBACK_RAW_RX_FILE:
        if (w && w->fn)
            w->fn(w->arg);
        return 0;
    case LWS_CALLBACK_RAW_CLOSE_FILE:
        if (w)
            w->wsi = NULL;
        return 0;
    default:
        return 0;
    }
}
