/* Unit tests for zrecv: a ZeroMQ message read whole, or refused whole. */
#include <errno.h>
#include <string.h>
#include <zmq.h>

#include "kernel/util/zrecv.h"
#include "testing.h"

/* zrecv_read reads a whole message, and refuses one with too many frames or
 * too many bytes whole, leaving the socket at the next message. */
static void test_a_message_is_read_whole(void)
{
    void *ctx = zmq_ctx_new();
    REQUIRE(ctx != NULL);
    void *in = zmq_socket(ctx, ZMQ_PAIR), *out = zmq_socket(ctx, ZMQ_PAIR);
    REQUIRE(in && out);
    REQUIRE(zmq_bind(in, "inproc://zrecv") == 0);
    REQUIRE(zmq_connect(out, "inproc://zrecv") == 0);
    struct zrecv r;
    CHECK_INT(zrecv_read(in, 0, &r), -EAGAIN);
    CHECK(r.n == 0 && r.frames == NULL);
    /* too many frames, then too many bytes, then one that is good */
    for (int i = 0; i < ZRECV_MAX_FRAMES + 5; i++)
        REQUIRE(zmq_send(out, "x", 1, i < ZRECV_MAX_FRAMES + 4 ? ZMQ_SNDMORE : 0) == 1);
    for (int i = 0; i < 3; i++)
        REQUIRE(zmq_send(out, "0123456789", 10, i < 2 ? ZMQ_SNDMORE : 0) == 10);
    REQUIRE(zmq_send(out, "ab", 2, ZMQ_SNDMORE) == 2);
    REQUIRE(zmq_send(out, "", 0, ZMQ_SNDMORE) == 0);
    REQUIRE(zmq_send(out, "cde", 3, 0) == 3);
    CHECK_INT(zrecv_read(in, 0, &r), -EMSGSIZE);
    CHECK(r.n == 0 && r.frames == NULL);
    CHECK_INT(zrecv_read(in, 15, &r), -EMSGSIZE);
    REQUIRE(zrecv_read(in, 15, &r) == 3);
    CHECK_INT(r.frames[0].len, 2);
    CHECK(memcmp(r.frames[0].data, "ab", 2) == 0);
    CHECK_INT(r.frames[1].len, 0);
    CHECK_INT(r.frames[2].len, 3);
    CHECK(memcmp(r.frames[2].data, "cde", 3) == 0);
    zrecv_release(&r);
    CHECK(r.n == 0 && r.frames == NULL && r.parts == NULL);
    CHECK_INT(zrecv_read(in, 0, &r), -EAGAIN);
    zmq_close(in);
    zmq_close(out);
    zmq_ctx_term(ctx);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_message_is_read_whole),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
