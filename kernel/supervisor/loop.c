/* loop: poll(2) over the registered descriptors and the sockets' ZMQ_FD, then
 * the time events that are due.
 *
 * A socket is asked for its events (ZMQ_EVENTS, two system calls) only when it
 * may have changed: its ZMQ_FD fired, its handler ran, or the owner says it
 * sent on it (loop_socket_used). ZMQ_FD only signals commands from ZeroMQ's
 * own thread, and any operation on a socket may take those commands, so a
 * socket that was used must be asked before the loop sleeps; one that was not
 * used and did not fire has nothing new. zmq_poll asked every socket twice per
 * turn, which was most of the supervisor's system calls per cell.
 *
 * The hard part is that handlers change the registrations while the loop is
 * walking them: a handler that restarts the worker removes the old link's
 * descriptor and adds the new one, which may well get the same number. So a
 * turn first copies the ids and the events zmq_poll found, then looks each id
 * up again before calling its handler: a removed registration is skipped,
 * and a new one, however its descriptor is numbered, waits for the next turn.
 * Time events are only marked when removed and swept at the end of a turn,
 * so the walk over them keeps its place; one added during the walk is not
 * due before the next turn. */
#include "kernel/supervisor/loop.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <zmq.h>

#include "kernel/util/monotime.h"

#define MAX_WAIT_MS 3600000 /* an hour: poll takes an int of milliseconds */

struct file_event {
    long long id;
    void *socket; /* or NULL for a descriptor */
    int fd;       /* the descriptor, or the socket's ZMQ_FD */
    bool check;   /* a socket to ask for its events before the next wait */
    int events;   /* LOOP_READABLE | LOOP_WRITABLE */
    int rank;
    loop_file_fn *fn;
    void *data;
};

struct time_event {
    long long id; /* 0: removed, swept at the end of the turn */
    double when;
    loop_time_fn *fn;
    void *data;
};

struct loop {
    loop_clock_fn *clock;
    struct file_event *files; /* sorted by rank, then by age */
    size_t nfiles, files_cap;
    struct time_event *timers;
    size_t ntimers, timers_cap;
    long long next_id;
    loop_hook_fn *hook;
    void *hook_data;
    bool stopped;
};

struct loop *loop_new(loop_clock_fn *clock)
{
    struct loop *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->clock = clock ? clock : monotime_now;
    l->next_id = 1;
    return l;
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    free(l->files);
    free(l->timers);
    free(l);
}

double loop_now(const struct loop *l)
{
    return l->clock();
}

/* array (n of *cap elements of size bytes) with room for one more: the same
 * or a new one (the old is then freed), or NULL when out of memory (the old
 * stays). */
static void *grow(void *array, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return array;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *na = realloc(array, ncap * size);
    if (na)
        *cap = ncap;
    return na;
}

static long long add_file(struct loop *l, void *socket, int fd, int events, int rank,
                          loop_file_fn *fn, void *data)
{
    struct file_event *nf = grow(l->files, l->nfiles, &l->files_cap, sizeof *nf);
    if (!nf)
        return -ENOMEM;
    l->files = nf;
    size_t at = l->nfiles;
    while (at > 0 && l->files[at - 1].rank > rank)
        at--;
    memmove(&l->files[at + 1], &l->files[at], (l->nfiles - at) * sizeof *l->files);
    l->files[at] = (struct file_event){.id = l->next_id++,
                                       .socket = socket,
                                       .fd = fd,
                                       .events = events,
                                       .rank = rank,
                                       .fn = fn,
                                       .data = data};
    l->nfiles++;
    return l->files[at].id;
}

static struct file_event *find_file(struct loop *l, long long id)
{
    for (size_t i = 0; i < l->nfiles; i++)
        if (l->files[i].id == id)
            return &l->files[i];
    return NULL;
}

long long loop_add_socket(struct loop *l, void *socket, int rank, loop_file_fn *fn,
                          void *data)
{
    int fd;
    size_t len = sizeof fd;
    if (zmq_getsockopt(socket, ZMQ_FD, &fd, &len) != 0)
        return -errno;
    long long id = add_file(l, socket, fd, LOOP_READABLE, rank, fn, data);
    if (id > 0)
        find_file(l, id)->check = true;
    return id;
}

void loop_socket_used(struct loop *l, const void *socket)
{
    for (size_t i = 0; i < l->nfiles; i++)
        if (l->files[i].socket == socket)
            l->files[i].check = true;
}

long long loop_add_fd(struct loop *l, int fd, int events, int rank, loop_file_fn *fn,
                      void *data)
{
    if (fd < 0)
        return -EBADF;
    return add_file(l, NULL, fd, events, rank, fn, data);
}

int loop_set_events(struct loop *l, long long id, int events)
{
    struct file_event *f = find_file(l, id);
    if (!f)
        return -ENOENT;
    f->events = events;
    return 0;
}

void loop_del_file(struct loop *l, long long id)
{
    struct file_event *f = find_file(l, id);
    if (!f)
        return;
    size_t i = (size_t)(f - l->files);
    memmove(&l->files[i], &l->files[i + 1], (l->nfiles - i - 1) * sizeof *l->files);
    l->nfiles--;
}

long long loop_add_timer(struct loop *l, double delay, loop_time_fn *fn, void *data)
{
    struct time_event *nt = grow(l->timers, l->ntimers, &l->timers_cap, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    l->timers = nt;
    struct time_event *t = &l->timers[l->ntimers++];
    *t = (struct time_event){
        .id = l->next_id++, .when = l->clock() + delay, .fn = fn, .data = data};
    return t->id;
}

void loop_del_timer(struct loop *l, long long id)
{
    for (size_t i = 0; id > 0 && i < l->ntimers; i++)
        if (l->timers[i].id == id)
            l->timers[i].id = 0;
}

static void sweep_timers(struct loop *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->ntimers; i++)
        if (l->timers[i].id)
            l->timers[k++] = l->timers[i];
    l->ntimers = k;
}

void loop_set_before_wait(struct loop *l, loop_hook_fn *fn, void *data)
{
    l->hook = fn;
    l->hook_data = data;
}

/* Milliseconds until the first deadline, at most max_wait_ms (-1: none). */
static long wait_ms(const struct loop *l, int max_wait_ms)
{
    double next = 0;
    bool any = false;
    for (size_t i = 0; i < l->ntimers; i++)
        if (l->timers[i].id && (!any || l->timers[i].when < next)) {
            next = l->timers[i].when;
            any = true;
        }
    long ms = max_wait_ms < 0 ? MAX_WAIT_MS : max_wait_ms;
    if (any) {
        double until = ceil((next - l->clock()) * 1000);
        if (until < ms)
            ms = until < 0 ? 0 : (long)until;
    }
    return max_wait_ms < 0 && !any ? -1 : ms;
}

/* Whether a socket has a message to read: also when asking fails (a closed
 * context), so that its handler finds out. */
static bool socket_readable(void *socket)
{
    int ev = 0;
    size_t len = sizeof ev;
    return zmq_getsockopt(socket, ZMQ_EVENTS, &ev, &len) != 0 || (ev & ZMQ_POLLIN);
}

static void fire_files(struct loop *l, const int *ready, const long long *ids, size_t n)
{
    for (size_t i = 0; i < n && !l->stopped; i++) {
        if (!ready[i])
            continue;
        struct file_event *f = find_file(l, ids[i]);
        if (!f)
            continue; /* removed by an earlier handler of this turn */
        int events = ready[i] & (LOOP_READABLE | (f->events & LOOP_WRITABLE));
        if (!events)
            continue;
        f->fn(l, f->id, events, f->data);
        /* It may have left messages (a batch is done): asked again next turn. */
        if ((f = find_file(l, ids[i])) && f->socket)
            f->check = true;
    }
}

static void fire_timers(struct loop *l)
{
    long long newest = l->next_id; /* those added from here on wait a turn */
    for (size_t i = 0; i < l->ntimers && !l->stopped; i++) {
        struct time_event *t = &l->timers[i];
        if (!t->id || t->id >= newest || t->when > l->clock())
            continue;
        long long id = t->id;
        double again = t->fn(l, id, t->data);
        t = &l->timers[i]; /* the handler may have grown the array */
        if (t->id != id)
            continue; /* it removed itself */
        if (again < 0)
            t->id = 0;
        else
            t->when = l->clock() + again;
    }
    sweep_timers(l);
}

int loop_turn(struct loop *l, int max_wait_ms)
{
    if (l->hook)
        l->hook(l, l->hook_data);
    if (l->stopped)
        return 0;
    size_t n = l->nfiles;
    struct pollfd *pfd = calloc(n ? n : 1, sizeof *pfd);
    long long *ids = calloc(n ? n : 1, sizeof *ids);
    int *ready = calloc(n ? n : 1, sizeof *ready);
    int rc = 0;
    if (!pfd || !ids || !ready) {
        rc = -ENOMEM;
        goto out;
    }
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        struct file_event *f = &l->files[i];
        ids[i] = f->id;
        pfd[i].fd = f->fd;
        pfd[i].events = (short)((f->events & LOOP_READABLE ? POLLIN : 0) |
                                (f->events & LOOP_WRITABLE ? POLLOUT : 0));
        if (f->socket && f->check) {
            f->check = false;
            if (socket_readable(f->socket)) {
                ready[i] = LOOP_READABLE;
                any = true;
            }
        }
    }
    if (poll(pfd, n, any ? 0 : (int)wait_ms(l, max_wait_ms)) < 0) {
        if (errno != EINTR) {
            rc = -errno;
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            pfd[i].revents = 0; /* a signal: what the sockets said still holds */
    }
    for (size_t i = 0; i < n; i++) {
        short re = pfd[i].revents;
        if (!re)
            continue;
        if (l->files[i].socket) {
            if (!ready[i] && socket_readable(l->files[i].socket))
                ready[i] = LOOP_READABLE;
            continue;
        }
        if (re & ~(POLLIN | POLLOUT)) /* an error or a hang-up: a read finds out */
            ready[i] |= LOOP_READABLE;
        if (re & POLLIN)
            ready[i] |= LOOP_READABLE;
        if (re & POLLOUT)
            ready[i] |= LOOP_WRITABLE;
    }
    fire_files(l, ready, ids, n);
    fire_timers(l);
out:
    free(pfd);
    free(ids);
    free(ready);
    return rc;
}

int loop_run(struct loop *l)
{
    while (!l->stopped) {
        int rc = loop_turn(l, -1);
        if (rc)
            return rc;
    }
    return 0;
}

void loop_stop(struct loop *l)
{
    l->stopped = true;
}

bool loop_stopped(const struct loop *l)
{
    return l->stopped;
}
