/* Fuzzes the link codec, which reads what the worker (hostile: user code can write to
 * the link) sends the supervisor. The input is fed to a link_reader in pieces, as a
 * socket would hand it over (the first byte sets the size of a piece); every frame
 * taken must encode back to the very bytes it came from, and a stream the reader calls
 * corrupt stays corrupt. Each frame is then read as the supervisor reads it (its kind,
 * its parser, an iopub frame's raw text put into its content): whatever it holds, a
 * frame that passes must leave its content an object and its raw text in it. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/link/link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reader's unread bytes before a frame is taken, to compare with its encoding. */
static int check_frame(const unsigned char *before, size_t avail,
                       const struct link_frame *f)
{
    unsigned char *enc;
    size_t len;
    if (link_encode(f->json, f->json_len, f->buffers, f->nbuffers, &enc, &len) != 0)
        return -1;
    int same = len <= avail && memcmp(enc, before, len) == 0 && f->json[f->json_len] == 0;
    free(enc);
    return same ? 0 : -1;
}

/* As route.c reads a frame from the worker. */
static void read_as_the_supervisor(const struct link_frame *f)
{
    enum link_kind kind;
    json_t *obj;
    char err[256];
    if (link_decode(f->json, f->json_len, &kind, &obj, err, sizeof err) != 0)
        return;
    if (kind == LINK_IOPUB) {
        struct link_iopub io;
        size_t left;
        if (link_iopub_parse(obj, &io, err, sizeof err) == 0 && io.raw &&
            link_iopub_take_raw(&io, f->buffers, f->nbuffers, &left, err, sizeof err) ==
                0) {
            if (!json_is_object(io.content) ||
                left + json_array_size(io.raw) != f->nbuffers)
                abort();
            /* what went in is a message's content jansson can write and read */
            char *text = json_dumps(io.content, JSON_COMPACT);
            json_t *back = text ? json_loads(text, 0, NULL) : NULL;
            if (text && !back)
                abort();
            json_decref(back);
            free(text);
        }
    } else if (kind == LINK_REPLY) {
        struct link_reply r;
        link_reply_parse(obj, &r, err, sizeof err);
    } else if (kind == LINK_HELLO) {
        struct link_hello h;
        link_hello_parse(obj, &h, err, sizeof err);
    } else if (kind == LINK_INPUT_REQUEST) {
        struct link_input_request q;
        link_input_request_parse(obj, &q, err, sizeof err);
    } else if (kind == LINK_HISTORY) {
        struct link_history q;
        link_history_parse(obj, &q, err, sizeof err);
    }
    json_decref(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] + 1;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 0;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    struct link_reader r;
    link_reader_init(&r);
    size_t sent = 0;
    int corrupt = 0;
    while (sent < size && !corrupt) {
        size_t k = size - sent < piece ? size - sent : piece;
        if (write(sv[1], data + sent, k) != (ssize_t)k)
            abort();
        sent += k;
        ssize_t got = link_reader_fill(&r, sv[0]);
        if (got != (ssize_t)k)
            abort();
        for (;;) {
            struct link_frame f;
            size_t avail = r.len - r.off;
            unsigned char *before = malloc(avail ? avail : 1);
            if (!before)
                abort();
            memcpy(before, r.buf + r.off, avail);
            int rc = link_reader_next(&r, &f);
            if (rc == 1) {
                if (check_frame(before, avail, &f) != 0)
                    abort();
                read_as_the_supervisor(&f);
                link_frame_release(&f);
            } else if (rc == -EBADMSG) {
                corrupt = 1;
                /* Corrupt stays corrupt: the same bytes give the same answer. */
                if (link_reader_next(&r, &f) != -EBADMSG)
                    abort();
            } else if (rc != 0 && rc != -ENOMEM) {
                abort();
            }
            free(before);
            if (rc != 1)
                break;
        }
    }
    link_reader_release(&r);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
