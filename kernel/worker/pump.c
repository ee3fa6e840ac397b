/* pump: read fds 1 and 2 of the worker and send them as stream messages.
 *
 * Two ways in: Python's sys.stdout and sys.stderr call pump_write, which only
 * copies into memory (a print costs no system call); and output written below
 * Python (a C extension's printf, os.write(1, ...), a crash message) goes to
 * fds 1 and 2, which are pipes this thread reads. Both land in the same
 * pending buffer, so they stay in order up to the gathering window.
 *
 * Why a thread: a cell that prints and then sleeps must show its line before
 * the sleep ends, with no help from the cell. The thread waits on the pipes
 * and sends what it read once FLUSH_MS have passed since the first unsent
 * byte, so print("x") (two writes, "x" and "\n") makes one message, and a
 * loop of prints makes a few messages rather than thousands.
 *
 * Output is cut at character boundaries: bytes of an incomplete UTF-8
 * sequence wait for the rest, and bytes that are not UTF-8 become U+FFFD.
 *
 * The cap is per request: each request's output is counted in an account
 * keyed by its tag, so a subshell's cell that starts while the main shell's
 * prints neither resets the main cell's count nor shares its cap. */
#include "kernel/worker/pump.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/worker/uplink.h"
#include "protocol/utf8.h"

#define FLUSH_MS  20
#define SEND_AT   (256u << 10) /* send at once when this much is waiting */
#define PIPE_SIZE (1 << 20)

#define TAG_MAX  128
#define ACCOUNTS 64 /* requests whose output is counted: running ones and recent ones */

struct pending {
    char *data;
    size_t len, cap;
    char tag[TAG_MAX]; /* msg_id of the request the bytes belong to; "" for none */
};

static const char *const stream_names[2] = {"stdout", "stderr"};
static int pipe_r[2] = {-1, -1};
static int wake_fd = -1; /* an eventfd: output was written by pump_write */
static pthread_mutex_t pump_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending pend[2];
static double first_at;           /* monotonic time of the oldest unsent byte; 0: none */
static char default_tag[TAG_MAX]; /* for output from C code: the main shell's request */

/* The output count of one request, keyed by its tag. An account stays after
 * its request ends (closed), so that a thread the cell started keeps counting
 * against the cell's cap, until the slot is needed for a newer request. */
struct account {
    char tag[TAG_MAX];
    unsigned long cap; /* 0: none */
    unsigned long sent, dropped;
    bool open;                /* between pump_begin and pump_end */
    unsigned long long stamp; /* when last opened or used: the oldest closed one goes */
};

static struct account accounts[ACCOUNTS];
static unsigned long long stamps;
static unsigned long default_cap; /* for output of a request with no account yet */

static double now_ms(void)
{
    return monotime_now() * 1000;
}

/* Copies the sendable part of src into a new valid UTF-8 string (*out, caller
 * frees). Returns how many bytes of src were consumed: all of them when final,
 * else all but an incomplete sequence at the end. */
static size_t utf8_clean(const char *src, size_t len, bool final, char **out,
                         size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)src;
    char *o = malloc(len * 3 + 1); /* each bad byte becomes 3 */
    size_t i = 0, j = 0;
    if (!o) {
        *out = NULL;
        return len;
    }
    while (i < len) {
        int n = utf8_seq(s + i, len - i);
        if (n < 0 && !final)
            break;
        if (n <= 0) {
            memcpy(o + j, "\xEF\xBF\xBD", 3);
            j += 3;
            i++;
            continue;
        }
        memcpy(o + j, s + i, (size_t)n);
        i += (size_t)n;
        j += (size_t)n;
    }
    o[j] = 0;
    *out = o;
    *out_len = j;
    return i;
}

/* A stream message. Its text (valid UTF-8: see take_utf8) goes in the JSON, or,
 * when long, beside it as raw text (frames.h), escaped by no one on the way. */
static void send_stream(int which, const char *text, size_t len, const char *tag)
{
    bool raw = len >= LINK_RAW_MIN;
    json_t *content =
        raw ? json_pack("{s:s}", "name", stream_names[which])
            : json_pack("{s:s, s:s%}", "name", stream_names[which], "text", text, len);
    json_t *obj = content ? link_iopub_build(&(struct link_iopub){
                                .msg_type = "stream",
                                .parent = tag[0] ? tag : NULL,
                                .content = content,
                            })
                          : NULL;
    json_decref(content);
    if (obj && raw && json_object_set_new(obj, "raw", json_pack("[[s]]", "text")) != 0) {
        json_decref(obj);
        obj = NULL;
    }
    char *json = obj ? link_encode_text(obj) : NULL;
    if (json) {
        struct wire_frame body = {(void *)text, len};
        uplink_send(json, strlen(json), raw ? &body : NULL, raw ? 1 : 0);
    }
    free(json);
    json_decref(obj);
}

/* Which slot to give a new account: a free one, else the closed one used
 * longest ago, else (more requests at once than slots) the oldest open one. */
static int reuse_rank(const struct account *a)
{
    return !a->stamp ? 0 : !a->open ? 1 : 2;
}

/* The account of tag (pump_mu held): found, or made with the default cap.
 * Never NULL. */
static struct account *account_for(const char *tag)
{
    struct account *victim = NULL;
    for (size_t i = 0; i < ACCOUNTS; i++) {
        struct account *a = &accounts[i];
        if (a->stamp && strcmp(a->tag, tag) == 0) {
            a->stamp = ++stamps;
            return a;
        }
        if (!victim || reuse_rank(a) < reuse_rank(victim) ||
            (reuse_rank(a) == reuse_rank(victim) && a->stamp < victim->stamp))
            victim = a;
    }
    memset(victim, 0, sizeof *victim);
    snprintf(victim->tag, sizeof victim->tag, "%s", tag);
    victim->cap = default_cap;
    victim->stamp = ++stamps;
    return victim;
}

/* Sends pending output (pump_mu held). */
static void send_locked(bool final)
{
    for (int w = 0; w < 2; w++) {
        struct pending *p = &pend[w];
        if (!p->len)
            continue;
        char *text, *copy = NULL;
        size_t text_len, used;
        struct account *a = account_for(p->tag);
        /* Valid text (nearly always) is sent from where it waits; only text with
         * bytes to replace is copied. */
        size_t valid = utf8_valid_prefix(p->data, p->len);
        if (valid == p->len || (!final && utf8_seq((const unsigned char *)p->data + valid,
                                                   p->len - valid) < 0)) {
            text = p->data;
            text_len = used = valid;
        } else {
            used = utf8_clean(p->data, p->len, final, &copy, &text_len);
            text = copy;
        }
        if (!text) /* out of memory: what cannot be sent is counted as dropped */
            a->dropped += used;
        if (text && text_len) {
            size_t room = text_len;
            if (a->cap) {
                room = a->sent >= a->cap ? 0 : a->cap - a->sent;
                if (room > text_len)
                    room = text_len;
                while (room > 0 && room < text_len &&
                       ((unsigned char)text[room] & 0xC0) == 0x80)
                    room--;
                a->dropped += text_len - room;
            }
            if (room)
                send_stream(w, text, room, p->tag);
            a->sent += room;
        }
        free(copy);
        memmove(p->data, p->data + used, p->len - used);
        p->len -= used;
    }
    first_at = pend[0].len || pend[1].len ? now_ms() : 0;
}

static int reserve(struct pending *p, size_t more)
{
    if (p->cap - p->len >= more)
        return 0;
    size_t ncap = p->cap ? p->cap : 131072;
    while (ncap - p->len < more)
        ncap *= 2;
    char *nd = realloc(p->data, ncap);
    if (!nd)
        return -ENOMEM;
    p->data = nd;
    p->cap = ncap;
    return 0;
}

/* Appends output to a stream's pending bytes (pump_mu held), keeping the order
 * of the two streams and waking the thread when this starts a new batch. */
static void append_locked(int w, const char *data, size_t len, const char *tag)
{
    struct pending *p = &pend[w];
    if (!tag)
        tag = default_tag;
    /* Keep order across the two streams, and keep each message to one request:
     * what is already waiting goes out before this starts something else. */
    if ((p->len == 0 && pend[1 - w].len) || (p->len && strcmp(p->tag, tag) != 0))
        send_locked(false);
    if (p->len == 0)
        snprintf(p->tag, sizeof p->tag, "%s", tag);
    struct account *a = account_for(p->tag);
    if (a->cap) {
        /* Past the cap, output is counted, not kept: a print of a gigabyte must
         * not need a gigabyte (a few bytes more than the room left complete a
         * character cut at the cap). */
        size_t held = a->sent;
        for (int s = 0; s < 2; s++)
            if (strcmp(pend[s].tag, p->tag) == 0)
                held += pend[s].len;
        size_t room = held >= a->cap ? 0 : a->cap - held;
        if (len > room + 4) {
            a->dropped += len - (room + 4);
            len = room + 4;
        }
    }
    while (len) {
        /* In batches, so that one huge write is sent as it is copied. */
        size_t chunk = len < SEND_AT ? len : SEND_AT;
        if (reserve(p, chunk) != 0) {
            a->dropped += len;
            return;
        }
        memcpy(p->data + p->len, data, chunk);
        p->len += chunk;
        data += chunk;
        len -= chunk;
        if (!first_at) {
            first_at = now_ms();
            uint64_t one = 1;
            ssize_t n = write(wake_fd, &one, sizeof one);
            (void)n;
        }
        if (p->len >= SEND_AT)
            send_locked(false);
    }
}

void pump_write(int which, const char *data, size_t len, const char *tag)
{
    if (which != 1 && which != 2)
        return;
    pthread_mutex_lock(&pump_mu);
    append_locked(which - 1, data, len, tag);
    pthread_mutex_unlock(&pump_mu);
}

void pump_set_default_tag(const char *tag)
{
    pthread_mutex_lock(&pump_mu);
    snprintf(default_tag, sizeof default_tag, "%s", tag ? tag : "");
    pthread_mutex_unlock(&pump_mu);
}

/* Reads what the pipes hold now (pump_mu held). */
static void drain_locked(void)
{
    char chunk[65536];
    for (int w = 0; w < 2; w++) {
        for (;;) {
            ssize_t n = read(pipe_r[w], chunk, sizeof chunk);
            if (n <= 0)
                break;
            append_locked(w, chunk, (size_t)n, NULL);
        }
    }
}

static void *pump_thread(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are for the main thread */
    struct pollfd fds[3] = {{.fd = pipe_r[0], .events = POLLIN},
                            {.fd = pipe_r[1], .events = POLLIN},
                            {.fd = wake_fd, .events = POLLIN}};
    for (;;) {
        pthread_mutex_lock(&pump_mu);
        int timeout = -1;
        if (first_at) {
            double left = first_at + FLUSH_MS - now_ms();
            timeout = left <= 0 ? 0 : (int)left + 1;
        }
        pthread_mutex_unlock(&pump_mu);
        int n = poll(fds, 3, timeout);
        if (n < 0 && errno != EINTR)
            break;
        if (fds[2].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(wake_fd, &v, sizeof v);
            (void)r;
        }
        pthread_mutex_lock(&pump_mu);
        drain_locked();
        if (first_at && now_ms() >= first_at + FLUSH_MS)
            send_locked(false);
        pthread_mutex_unlock(&pump_mu);
        if ((fds[0].revents | fds[1].revents) & (POLLHUP | POLLNVAL))
            break;
    }
    return NULL;
}

int pump_start(unsigned long cap)
{
    default_cap = cap;
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0)
        return -errno;
    for (int w = 0; w < 2; w++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
            return -errno;
        fcntl(p[0], F_SETPIPE_SZ, PIPE_SIZE);
        fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
        if (dup2(p[1], w + 1) < 0)
            return -errno;
        close(p[1]);
        pipe_r[w] = p[0];
    }
    pthread_t t;
    int rc = pthread_create(&t, NULL, pump_thread, NULL);
    if (rc)
        return -rc;
    pthread_detach(t);
    return 0;
}

void pump_flush(void)
{
    if (pipe_r[0] < 0)
        return;
    /* C code's printf sits in the C library's buffer (fd 1 is a pipe, so it is
     * fully buffered): push it into the pipe first. */
    fflush(stdout);
    fflush(stderr);
    /* A flush comes before every reply and display, and most find nothing to
     * send: one poll says whether C code wrote to the pipes, and only then are
     * they read; what Python wrote is in pend already. */
    struct pollfd fds[2] = {{.fd = pipe_r[0], .events = POLLIN},
                            {.fd = pipe_r[1], .events = POLLIN}};
    bool piped = poll(fds, 2, 0) != 0;
    pthread_mutex_lock(&pump_mu);
    if (piped)
        drain_locked();
    if (pend[0].len || pend[1].len)
        send_locked(true);
    pthread_mutex_unlock(&pump_mu);
}

void pump_begin(const char *tag, unsigned long max_bytes)
{
    pthread_mutex_lock(&pump_mu);
    struct account *a = account_for(tag ? tag : "");
    a->cap = max_bytes;
    a->sent = a->dropped = 0;
    a->open = true;
    pthread_mutex_unlock(&pump_mu);
}

unsigned long pump_end(const char *tag)
{
    pump_flush();
    pthread_mutex_lock(&pump_mu);
    struct account *a = account_for(tag ? tag : "");
    unsigned long d = a->dropped;
    a->open = false;
    pthread_mutex_unlock(&pump_mu);
    return d;
}
