/* template_msg: the messages between the supervisor and the worker template, each
 * one datagram of a SOCK_SEQPACKET socketpair (so a message is whole or
 * absent), descriptors as SCM_RIGHTS. A message of any other size or magic is
 * refused, and whatever descriptors came with it are closed, so that nothing
 * is leaked into the process that receives it. */
#include "kernel/link/template_msg.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC_REQUEST 0x53505251u /* "SPRQ" */
#define MAGIC_READY   0x53505244u /* "SPRD" */
#define MAGIC_REPLY   0x53505250u /* "SPRP" */

struct request_msg {
    uint32_t magic;
    char note[SPAWN_NOTE_MAX];
};

struct answer_msg {
    uint32_t magic;
    int32_t pid;
    int32_t err;
};

union control {
    char buf[CMSG_SPACE(SPAWN_MAX_FDS * sizeof(int))];
    struct cmsghdr align;
};

int spawn_send_request(int sock, const int *fds, size_t nfds, const char *note)
{
    if (nfds < 2 || nfds > SPAWN_MAX_FDS)
        return -EINVAL;
    struct request_msg m = {.magic = MAGIC_REQUEST};
    size_t n = note ? strnlen(note, SPAWN_NOTE_MAX - 1) : 0;
    if (n)
        memcpy(m.note, note, n);
    union control ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {&m, sizeof m};
    struct msghdr h = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    ssize_t w;
    do
        w = sendmsg(sock, &h, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return -errno;
    return w == (ssize_t)sizeof m ? 0 : -EIO;
}

/* Receives one datagram of up to len bytes; the descriptors that came with it
 * go to fds (up to SPAWN_MAX_FDS; any beyond are closed). The datagram's size,
 * 0 when the other end has closed, or -errno. */
static ssize_t recv_with_fds(int sock, void *buf, size_t len, int flags, int *fds,
                             size_t *nfds)
{
    union control ctl;
    struct iovec iov = {buf, len};
    struct msghdr h = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    ssize_t r;
    do
        r = recvmsg(sock, &h, flags | MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    *nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int got[SPAWN_MAX_FDS + 8];
        if (k > sizeof got / sizeof *got)
            k = sizeof got / sizeof *got;
        memcpy(got, CMSG_DATA(c), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
            if (*nfds < SPAWN_MAX_FDS)
                fds[(*nfds)++] = got[i];
            else
                close(got[i]);
        }
    }
    /* A cut datagram or cut descriptors: not a message of ours. */
    if (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        return -EBADMSG;
    return r;
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

int spawn_recv_request(int sock, int fds[SPAWN_MAX_FDS], size_t *nfds, char *note,
                       size_t notelen)
{
    struct request_msg m;
    *nfds = 0;
    ssize_t r = recv_with_fds(sock, &m, sizeof m, 0, fds, nfds);
    if (r == 0)
        return 0;
    if (r < 0 || r != (ssize_t)sizeof m || m.magic != MAGIC_REQUEST || *nfds < 2) {
        close_all(fds, *nfds);
        *nfds = 0;
        return r < 0 && r != -EBADMSG ? (int)r : -EBADMSG;
    }
    m.note[SPAWN_NOTE_MAX - 1] = 0;
    if (note && notelen) {
        size_t n = strnlen(m.note, notelen - 1);
        memcpy(note, m.note, n);
        note[n] = 0;
    }
    return 1;
}

static int send_answer(int sock, uint32_t magic, pid_t pid, int err)
{
    struct answer_msg m = {magic, (int32_t)pid, (int32_t)err};
    ssize_t w;
    do
        w = send(sock, &m, sizeof m, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return -errno;
    return w == (ssize_t)sizeof m ? 0 : -EIO;
}

int spawn_send_ready(int sock)
{
    return send_answer(sock, MAGIC_READY, getpid(), 0);
}

int spawn_send_reply(int sock, pid_t pid, int err)
{
    return send_answer(sock, MAGIC_REPLY, pid, err);
}

int spawn_recv_answer(int sock, enum spawn_answer *kind, pid_t *pid, int *err)
{
    struct answer_msg m;
    int fds[SPAWN_MAX_FDS];
    size_t nfds = 0;
    ssize_t r = recv_with_fds(sock, &m, sizeof m, MSG_DONTWAIT, fds, &nfds);
    close_all(fds, nfds);
    if (r == 0 || r == -EAGAIN)
        return r == 0 ? 0 : -EAGAIN;
    if (r == -EWOULDBLOCK)
        return -EAGAIN;
    if (r < 0 && r != -EBADMSG)
        return (int)r;
    if (r != (ssize_t)sizeof m || nfds ||
        (m.magic != MAGIC_READY && m.magic != MAGIC_REPLY))
        return -EBADMSG;
    *kind = m.magic == MAGIC_READY ? SPAWN_READY : SPAWN_REPLY;
    *pid = m.pid;
    *err = m.err;
    return 1;
}
