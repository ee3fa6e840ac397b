/* relay: a kernel's stderr into the server's log (relay.h). What comes is
 * the kernel's, and through it a little of the worker's (the supervisor
 * bounds and cleans those lines): it is cut into lines of a bounded length
 * and log.c replaces any control character before a line is written. */
#include "kernel/serve/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/serve/loop.h"
#include "kernel/serve/slog.h"

struct relay {
    int rfd, wfd;
    struct loop_watch *watch;
    char id[64], user[64];
    char line[RELAY_LINE_MAX];
    size_t len;
};

static enum log_level level_of(const char *line)
{
    const char *end = strchr(line, ']');
    size_t n = end ? (size_t)(end - line) : 0;
    if (n >= 6 && memcmp(end - 6, " error", 6) == 0)
        return LOG_ERROR;
    if (n >= 5 && memcmp(end - 5, " warn", 5) == 0)
        return LOG_WARN;
    return LOG_INFO;
}

static void emit(struct relay *r)
{
    r->line[r->len] = 0;
    if (r->len) {
        slog_kernel(r->id, r->user);
        log_msg(level_of(r->line), "%s", r->line);
        slog_kernel(NULL, NULL);
    }
    r->len = 0;
}

static void on_readable(void *arg)
{
    struct relay *r = arg;
    char buf[8192];
    ssize_t n;
    while ((n = read(r->rfd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                emit(r);
                continue;
            }
            if (r->len == sizeof r->line - 1)
                emit(r);
            r->line[r->len++] = buf[i];
        }
    }
}

struct relay *relay_new(struct lws_vhost *vh, const char *id, const char *user,
                        char *path, size_t len)
{
    struct relay *r = calloc(1, sizeof *r);
    int p[2];
    if (!r)
        return NULL;
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(r);
        return NULL;
    }
    r->rfd = p[0];
    r->wfd = p[1];
    /* The kernel's end blocks, as a terminal's would. */
    fcntl(r->wfd, F_SETFL, fcntl(r->wfd, F_GETFL) & ~O_NONBLOCK);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->user, sizeof r->user, "%s", user ? user : "");
    snprintf(path, len, "/proc/self/fd/%d", r->wfd);
    if (!(r->watch = loop_watch(vh, r->rfd, on_readable, r))) {
        relay_free(r);
        return NULL;
    }
    return r;
}

void relay_free(struct relay *r)
{
    if (!r)
        return;
    on_readable(r); /* what is there already */
    emit(r);
    loop_unwatch(&r->watch);
    close(r->rfd);
    close(r->wfd);
    free(r);
}
