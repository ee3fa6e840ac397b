/* uplink: fd 3, shared by the worker's threads.
 *
 * One mutex per direction: a thread that sends a large chart must not hold up
 * the reader, and two senders must not interleave their frames. Waiting for
 * input is a poll with a bounded wait, so that a cell closing fd 3 under it is
 * noticed (poll holds the socket open and would never return).
 *
 * Who reads is the hard part. Between the main shell's cells, the main thread
 * reads the link itself, so a request wakes the thread that runs it and
 * nothing is handed from one thread to another; while a cell runs there, the
 * runtime's reader thread reads and routes (interrupt notes, input replies,
 * subshells' requests). The turn passes with uplink_give_turn before the cell
 * and uplink_take_turn after it, which waits until the reader has routed what
 * it took: frames are routed in the order they came, whoever reads them. The
 * reader waits in an epoll set to which the turn adds fd 3 and from which it
 * removes it, so passing the turn wakes no thread: a cell during which nothing
 * comes costs the reader nothing. */
#include "kernel/worker/uplink.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/util/log.h"

static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recv_mu = PTHREAD_MUTEX_INITIALIZER;
static struct link_reader reader;
static size_t frame_limit = LINK_MAX_FRAME;
static bool idle_trimmed = true; /* (recv_mu) no frame since memory was last given back */
static void (*idle_hook)(void);  /* gives back what the runtime keeps */

static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static bool reader_turn;    /* a main-shell cell runs: the reader thread reads */
static bool reader_holding; /* the reader thread is reading, or routing what it read */
static int turn_ep = -1;    /* the reader thread's epoll: fd 3 while it has the turn */
static int turn_fd = -1;    /* an eventfd in it: wakes the reader thread */

/* The link is the worker's only reason to exist: when it breaks (the
 * supervisor has gone, or a cell closed or replaced fd 3), the worker ends at
 * once. */
static _Noreturn void link_lost(int err)
{
    log_info("the link to the supervisor is gone (%s); the worker exits",
             err ? strerror(err) : "closed");
    _exit(err ? 70 : 0);
}

void uplink_on_idle(void (*fn)(void))
{
    idle_hook = fn;
}

void uplink_init(void)
{
    fcntl(UPLINK_FD, F_SETFD, FD_CLOEXEC);
    link_reader_init(&reader);
    turn_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    turn_ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = turn_fd};
    epoll_ctl(turn_ep, EPOLL_CTL_ADD, turn_fd, &ev);
}

void uplink_set_frame_limit(size_t max)
{
    frame_limit = max ? max : LINK_MAX_FRAME;
}

size_t uplink_frame_limit(void)
{
    return frame_limit;
}

int uplink_send(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers)
{
    /* Refused here, with nothing sent, rather than sent and the worker ended by the
     * supervisor for it: the code that made it gets an exception it can read. */
    size_t body = 4 + json_len;
    for (size_t i = 0; i < nbuffers; i++)
        body += 4 + buffers[i].len;
    if (body > frame_limit)
        return -EMSGSIZE;
    pthread_mutex_lock(&send_mu);
    int rc = link_write_frame(UPLINK_FD, json, json_len, buffers, nbuffers);
    pthread_mutex_unlock(&send_mu);
    if (rc == -EBADF || rc == -EPIPE || rc == -ECONNRESET || rc == -ENOTSOCK)
        link_lost(-rc);
    return rc;
}

int uplink_send_frame(const json_t *frame)
{
    char *text = link_encode_text(frame);
    if (!text)
        return -ENOMEM;
    int rc = uplink_send(text, strlen(text), NULL, 0);
    free(text);
    return rc;
}

int uplink_recv(struct link_frame *out, bool block)
{
    pthread_mutex_lock(&recv_mu);
    int rc;
    for (;;) {
        rc = link_reader_next(&reader, out);
        if (rc != 0)
            break;
        struct pollfd pfd = {.fd = UPLINK_FD, .events = POLLIN};
        int n = poll(&pfd, 1, block ? 1000 : 0);
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0) {
            if (fcntl(UPLINK_FD, F_GETFD) < 0)
                link_lost(EBADF);
            if (!block) {
                rc = 0;
                break;
            }
            /* A second with nothing to do: what the last cells left freed goes
             * back to the system (blocks.h keeps some while cells come). */
            if (!idle_trimmed) {
                link_reader_shrink(&reader);
                if (idle_hook)
                    idle_hook();
                malloc_trim(0);
                idle_trimmed = true;
            }
            continue;
        }
        if (pfd.revents & POLLNVAL)
            link_lost(EBADF);
        ssize_t got = link_reader_fill(&reader, UPLINK_FD);
        if (got == 0)
            link_lost(0);
        if (got < 0 && got != -EAGAIN && got != -EINTR)
            link_lost((int)-got);
        if (got == -EINTR) {
            rc = -EINTR;
            break;
        }
    }
    if (rc > 0)
        idle_trimmed = false;
    pthread_mutex_unlock(&recv_mu);
    return rc;
}

/* Marks the reader thread as holding nothing (turn_mu held). */
static void reader_lets_go_locked(void)
{
    reader_holding = false;
    pthread_cond_broadcast(&turn_cv);
}

/* True when the link has bytes for the reader: buffered, or waiting on fd 3. */
static bool link_has_input(void)
{
    pthread_mutex_lock(&recv_mu);
    bool buffered = reader.len > reader.off;
    pthread_mutex_unlock(&recv_mu);
    return buffered;
}

int uplink_recv_in_turn(struct link_frame *out)
{
    pthread_mutex_lock(&turn_mu);
    reader_lets_go_locked();
    pthread_mutex_unlock(&turn_mu);
    for (;;) {
        /* The main thread puts fd 3 in this set for the length of a cell and
         * takes it out after, without waking this thread either time. */
        struct epoll_event ev[2];
        int n = epoll_wait(turn_ep, ev, 2, 1000);
        if (n < 0 && errno == EINTR)
            return -EINTR;
        for (int i = 0; i < n; i++)
            if (ev[i].data.fd == turn_fd) {
                uint64_t v;
                ssize_t r = read(turn_fd, &v, sizeof v);
                (void)r;
            }
        if (n == 0 && fcntl(UPLINK_FD, F_GETFD) < 0)
            link_lost(EBADF);
        pthread_mutex_lock(&turn_mu);
        if (reader_turn && n > 0) { /* fd 3 is readable, or bytes wait in the buffer */
            reader_holding = true;
            pthread_mutex_unlock(&turn_mu);
            int rc = uplink_recv(out, true);
            if (rc < 0) {
                pthread_mutex_lock(&turn_mu);
                reader_lets_go_locked();
                pthread_mutex_unlock(&turn_mu);
            } else if (link_has_input()) {
                /* The read took the next frame too: fd 3 will not say so. */
                uint64_t one = 1;
                ssize_t w = write(turn_fd, &one, sizeof one);
                (void)w;
            }
            return rc;
        }
        pthread_mutex_unlock(&turn_mu); /* taken back meanwhile, or a timeout */
    }
}

void uplink_give_turn(void)
{
    pthread_mutex_lock(&turn_mu);
    reader_turn = true;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = UPLINK_FD};
    epoll_ctl(turn_ep, EPOLL_CTL_ADD, UPLINK_FD, &ev);
    if (link_has_input()) { /* what the main thread read past its request */
        uint64_t one = 1;
        ssize_t w = write(turn_fd, &one, sizeof one);
        (void)w;
    }
    pthread_mutex_unlock(&turn_mu);
}

void uplink_take_turn(void)
{
    pthread_mutex_lock(&turn_mu);
    reader_turn = false;
    epoll_ctl(turn_ep, EPOLL_CTL_DEL, UPLINK_FD, NULL);
    /* A frame it took is routed before the main thread reads the next. */
    while (reader_holding)
        pthread_cond_wait(&turn_cv, &turn_mu);
    pthread_mutex_unlock(&turn_mu);
}
