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
 * and uplink_take_turn after it, which wakes the reader out of its poll (an
 * eventfd) and waits until it has routed what it took: frames are routed in
 * the order they came, whoever reads them. */
#include "kernel/worker/uplink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/log.h"

static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recv_mu = PTHREAD_MUTEX_INITIALIZER;
static struct link_reader reader;

static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static bool reader_turn;    /* a main-shell cell runs: the reader thread reads */
static bool reader_holding; /* the reader thread is reading, or routing what it read */
static int turn_fd = -1;    /* an eventfd: wakes the reader thread out of its poll */

/* The link is the worker's only reason to exist: when it breaks (the
 * supervisor has gone, or a cell closed or replaced fd 3), the worker ends at
 * once. */
static _Noreturn void link_lost(int err)
{
    log_info("the link to the supervisor is gone (%s); the worker exits",
             err ? strerror(err) : "closed");
    _exit(err ? 70 : 0);
}

void uplink_init(void)
{
    fcntl(UPLINK_FD, F_SETFD, FD_CLOEXEC);
    link_reader_init(&reader);
    turn_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int uplink_send(const char *json, size_t json_len, const struct wire_frame *buffers,
                size_t nbuffers)
{
    unsigned char *frame;
    size_t len;
    int rc = link_encode(json, json_len, buffers, nbuffers, &frame, &len);
    if (rc)
        return rc;
    pthread_mutex_lock(&send_mu);
    rc = link_write_all(UPLINK_FD, frame, len);
    pthread_mutex_unlock(&send_mu);
    free(frame);
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
    for (;;) {
        while (!reader_turn)
            pthread_cond_wait(&turn_cv, &turn_mu);
        pthread_mutex_unlock(&turn_mu);
        /* Waits holding nothing, so that the main thread can take the turn back
         * without waiting for this thread: it wakes it (turn_fd) to park. */
        struct pollfd pfd[2] = {{.fd = UPLINK_FD, .events = POLLIN},
                                {.fd = turn_fd, .events = POLLIN}};
        int n = link_has_input() ? 1 : poll(pfd, 2, 1000);
        if (pfd[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(turn_fd, &v, sizeof v);
            (void)r;
        }
        if (n == 0 && fcntl(UPLINK_FD, F_GETFD) < 0)
            link_lost(EBADF);
        pthread_mutex_lock(&turn_mu);
        if (n < 0 && errno == EINTR) {
            reader_lets_go_locked();
            pthread_mutex_unlock(&turn_mu);
            return -EINTR;
        }
        if (!reader_turn || n == 0 || (n > 0 && !pfd[0].revents && !link_has_input()))
            continue; /* taken back (park), a timeout, or a wake from an earlier cell */
        reader_holding = true;
        pthread_mutex_unlock(&turn_mu);
        int rc = uplink_recv(out, true);
        if (rc < 0) {
            pthread_mutex_lock(&turn_mu);
            reader_lets_go_locked();
            pthread_mutex_unlock(&turn_mu);
        }
        return rc;
    }
}

void uplink_give_turn(void)
{
    pthread_mutex_lock(&turn_mu);
    reader_turn = true;
    pthread_cond_broadcast(&turn_cv);
    pthread_mutex_unlock(&turn_mu);
}

void uplink_take_turn(void)
{
    pthread_mutex_lock(&turn_mu);
    reader_turn = false;
    /* A frame it took is routed before the main thread reads the next; if it
     * is only waiting, it is woken to park, and not waited for. */
    while (reader_holding)
        pthread_cond_wait(&turn_cv, &turn_mu);
    uint64_t one = 1;
    ssize_t w = write(turn_fd, &one, sizeof one);
    (void)w;
    pthread_mutex_unlock(&turn_mu);
}
