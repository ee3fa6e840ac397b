/* commport: the gateway's requests, read without ever waiting.
 *
 * The gateway's side (its RemoteProcessProxy) opens a connection per request,
 * sends json.dumps of a dict, and closes it; its Python launcher reads to the
 * end of the stream, json.loads it, and os.kill()s the kernel with signum or
 * stops listening on shutdown. Here the same requests are events of the
 * supervisor's loop: each peer is a file event with a deadline, its bytes go
 * into a fixed buffer, and a request is acted on as soon as the buffer holds
 * one whole JSON object (a JSON object ends itself) or at the end of the
 * stream. The hard part is that the port is open to whoever can reach it: no
 * request may block the loop, grow a buffer or leave a descriptor behind, and
 * a flood of bad peers must not flood the log either. */
#include "kernel/supervisor/commport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/util/log.h"

#define ACCEPT_BATCH   64  /* connections accepted per event */
#define WARN_EVERY_S   1.0 /* at most one warning a second; the rest are counted */
#define ACCEPT_PAUSE_S 1.0 /* out of descriptors: stop accepting for a while */

struct commport;

struct peer {
    struct commport *c;
    int fd; /* -1: the slot is free */
    long long file_id, timer_id;
    char addr[INET6_ADDRSTRLEN + 8];
    size_t len;
    char buf[COMMPORT_MAX_REQUEST + 1];
};

struct commport {
    struct loop *loop;
    struct commport_events ev;
    int fd;
    long long listen_id, pause_id;
    double last_warning;
    unsigned long suppressed; /* warnings not logged since the last one */
    struct peer peers[COMMPORT_MAX_PEERS];
};

static void warn(struct commport *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct commport *c, const char *fmt, ...)
{
    double now = loop_now(c->loop);
    if (c->last_warning && now - c->last_warning < WARN_EVERY_S) {
        c->suppressed++;
        return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (c->suppressed)
        log_warn("the gateway's communication port: %s (and %lu more dropped in the last "
                 "second or so)",
                 line, c->suppressed);
    else
        log_warn("the gateway's communication port: %s", line);
    c->last_warning = now;
    c->suppressed = 0;
}

static void drop(struct peer *p)
{
    if (p->fd < 0)
        return;
    loop_del_file(p->c->loop, p->file_id);
    loop_del_timer(p->c->loop, p->timer_id);
    close(p->fd);
    p->fd = -1;
    p->len = 0;
}

static void stop_listening(struct commport *c)
{
    if (c->fd < 0)
        return;
    loop_del_file(c->loop, c->listen_id);
    loop_del_timer(c->loop, c->pause_id);
    close(c->fd);
    c->fd = -1;
}

/* Python's bool() of a JSON value, as the launcher reads "shutdown". */
static bool truthy(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_TRUE:
        return true;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    default:
        return false;
    }
}

/* signum as the launcher's int() reads it: an integer, or a string of digits. */
static bool signal_number(const json_t *v, long long *n)
{
    if (json_is_integer(v)) {
        *n = json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (!s || !*s || strlen(s) > 6 || strspn(s, "0123456789") != strlen(s))
        return false;
    *n = atoll(s);
    return true;
}

static void act_on_signal(struct commport *c, const struct peer *p, long long n)
{
    char why[96];
    switch (n) {
    case 0:
        log_debug("the gateway polls the kernel (%s)", p->addr);
        return;
    case SIGINT:
        log_info("the gateway interrupts the kernel (signal 2, from %s)", p->addr);
        c->ev.interrupt(c->ev.data);
        return;
    case SIGTERM:
    case SIGHUP:
    case SIGQUIT:
    case SIGKILL:
        snprintf(why, sizeof why, "the gateway sent signal %lld (%s)", n,
                 strsignal((int)n));
        c->ev.stop(c->ev.data, why);
        return;
    default:
        if (n < 0 || n >= NSIG)
            warn(c, "signal %lld from %s does not exist; ignored", n, p->addr);
        else
            warn(c, "signal %lld (%s) from %s is not one the kernel acts on; ignored", n,
                 strsignal((int)n), p->addr);
    }
}

/* One whole request from p: act on it. */
static void act(struct commport *c, struct peer *p, json_t *req)
{
    const json_t *signum = json_object_get(req, "signum");
    const json_t *shutdown = json_object_get(req, "shutdown");
    long long n = 0;
    if (!json_is_object(req))
        warn(c, "a request from %s is not a JSON object; dropped", p->addr);
    else if (!signum && !shutdown)
        warn(c, "a request from %s has neither \"signum\" nor \"shutdown\"; dropped",
             p->addr);
    else if (signum && !signal_number(signum, &n))
        warn(c, "a request from %s has a \"signum\" that is not a number; dropped",
             p->addr);
    else if (signum)
        act_on_signal(c, p, n);
    if (json_is_object(req) && shutdown && truthy(shutdown)) {
        log_info("the gateway asks the kernel to shut down (%s)", p->addr);
        stop_listening(c);
        c->ev.stop(c->ev.data, "the gateway asked the kernel to shut down");
    }
}

/* Acts on p's request if its buffer holds one whole JSON value; at the end of
 * the stream (eof), whatever it holds is the request. Returns true when p is
 * done with. */
static bool try_request(struct commport *c, struct peer *p, bool eof)
{
    json_error_t e;
    json_t *req = p->len ? json_loadb(p->buf, p->len, 0, &e) : NULL;
    if (!req && !eof)
        return false;
    if (req)
        act(c, p, req);
    else if (p->len)
        warn(c, "a request from %s is not JSON (%s); dropped", p->addr, e.text);
    json_decref(req);
    return true;
}

static void on_peer(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    (void)events;
    struct peer *p = data;
    struct commport *c = p->c;
    for (;;) {
        ssize_t n = read(p->fd, p->buf + p->len, sizeof p->buf - p->len);
        if (n > 0) {
            p->len += (size_t)n;
            if (p->len > COMMPORT_MAX_REQUEST) {
                warn(c, "%s sent more than %d bytes; dropped", p->addr,
                     COMMPORT_MAX_REQUEST);
                drop(p);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN) {
            warn(c, "reading from %s: %s; dropped", p->addr, strerror(errno));
            drop(p);
            return;
        }
        if (try_request(c, p, n == 0))
            drop(p);
        return;
    }
}

static double on_peer_timeout(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct peer *p = data;
    p->timer_id = 0;
    warn(p->c, "%s sent no whole request within %g s; dropped", p->addr,
         COMMPORT_PEER_TIMEOUT_S);
    drop(p);
    return LOOP_NOMORE;
}

static void describe(int fd, char *out, size_t len)
{
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&a, &alen) == 0) {
        if (a.ss_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)&a;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (a.ss_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(out, len, "%s:%d", host, port);
}

static double on_pause_over(struct loop *l, long long id, void *data)
{
    (void)id;
    struct commport *c = data;
    c->pause_id = 0;
    if (c->fd >= 0)
        loop_set_events(l, c->listen_id, LOOP_READABLE);
    return LOOP_NOMORE;
}

/* Takes a new peer into a free slot. Returns false when there is none or the
 * loop refuses it (fd is then closed). */
static bool admit(struct commport *c, int fd)
{
    struct peer *p = NULL;
    for (int i = 0; i < COMMPORT_MAX_PEERS && !p; i++)
        if (c->peers[i].fd < 0)
            p = &c->peers[i];
    char addr[sizeof p->addr];
    describe(fd, addr, sizeof addr);
    if (!p) {
        warn(c, "%d connections are open already; %s dropped", COMMPORT_MAX_PEERS, addr);
        close(fd);
        return false;
    }
    p->fd = fd;
    p->len = 0;
    memcpy(p->addr, addr, sizeof addr);
    p->file_id = loop_add_fd(c->loop, fd, LOOP_READABLE, LOOP_RANK_CONTROL, on_peer, p);
    p->timer_id = p->file_id > 0 ? loop_add_timer(c->loop, COMMPORT_PEER_TIMEOUT_S,
                                                  on_peer_timeout, p)
                                 : 0;
    if (p->file_id <= 0 || p->timer_id <= 0) {
        p->file_id = p->file_id > 0 ? p->file_id : 0;
        p->timer_id = p->timer_id > 0 ? p->timer_id : 0;
        warn(c, "cannot watch %s; dropped", addr);
        drop(p);
        return false;
    }
    return true;
}

static void on_listen(struct loop *l, long long id, int events, void *data)
{
    (void)events;
    struct commport *c = data;
    for (int i = 0; i < ACCEPT_BATCH && c->fd >= 0; i++) {
        int fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(c, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* The connection stays queued and the socket readable: look again later
             * rather than spin. */
            warn(c, "cannot accept a connection: %s; pausing for %g s", strerror(errno),
                 ACCEPT_PAUSE_S);
            loop_set_events(l, id, 0);
            if (!c->pause_id)
                c->pause_id = loop_add_timer(l, ACCEPT_PAUSE_S, on_pause_over, c);
            if (c->pause_id < 0)
                c->pause_id = 0;
        }
        return;
    }
}

struct commport *commport_new(struct loop *l, int *listen_fd,
                              const struct commport_events *ev)
{
    int fd = *listen_fd;
    *listen_fd = -1;
    struct commport *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->loop = l;
    c->ev = *ev;
    c->fd = fd;
    for (int i = 0; i < COMMPORT_MAX_PEERS; i++) {
        c->peers[i].c = c;
        c->peers[i].fd = -1;
    }
    /* The loop calls on_listen when a connection is queued, but it may be reset
     * before it is taken: accept4 must not wait then. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
        (c->listen_id =
             loop_add_fd(l, fd, LOOP_READABLE, LOOP_RANK_CONTROL, on_listen, c)) <= 0) {
        c->listen_id = 0;
        commport_free(c);
        return NULL;
    }
    return c;
}

void commport_free(struct commport *c)
{
    if (!c)
        return;
    for (int i = 0; i < COMMPORT_MAX_PEERS; i++)
        drop(&c->peers[i]);
    stop_listening(c);
    free(c);
}

bool commport_listening(const struct commport *c)
{
    return c && c->fd >= 0;
}
