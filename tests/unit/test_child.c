/* Unit tests for the child's link: what the supervisor queues for a worker that
 * does not read is bounded. A worker (here a small Python program on the link's
 * other end) sends a burst of frames, each of which the supervisor answers with
 * a large reply, and reads nothing for a while: the link is no longer read once
 * a few MiB wait for it, and the frames held back are all answered once it
 * reads, without more of them coming. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/util/monotime.h"
#include "kernel/supervisor/worker_process.h"
#include "kernel/supervisor/loop.h"
#include "testing.h"

#define FRAMES 200
#define REPLY  (1u << 20)

struct seen {
    struct child *c;
    int frames;
    bool corrupt;
    char *reply;
};

static void on_frame(void *data, const struct link_frame *f)
{
    (void)f;
    struct seen *s = data;
    s->frames++;
    CHECK(child_send(s->c, s->reply, REPLY, NULL, 0) == 0);
}

static void on_corrupt(void *data, const char *what)
{
    (void)what;
    ((struct seen *)data)->corrupt = true;
}

/* FRAMES frames in one write, a second of not reading, then reads to the end. */
static const char worker[] =
    "import json, os, struct, time\n"
    "f = json.dumps({'type': 'history', 'id': 1, 'query': {}}).encode()\n"
    "os.write(3, struct.pack('=II', len(f) + 4, len(f)) + f)\n"
    "os.write(3, (struct.pack('=II', len(f) + 4, len(f)) + f) * 199)\n"
    "time.sleep(1)\n"
    "while os.read(3, 1 << 20):\n"
    "    pass\n";

static void test_a_worker_that_does_not_read_is_not_heard(void)
{
    struct loop *l = loop_new(NULL);
    REQUIRE(l != NULL);
    struct seen s = {0};
    REQUIRE((s.reply = malloc(REPLY)) != NULL);
    memset(s.reply, ' ', REPLY);
    s.reply[0] = '{';
    s.reply[REPLY - 1] = '}';
    struct child_events ev = {.data = &s, .frame = on_frame, .corrupt = on_corrupt};
    REQUIRE((s.c = child_new(l, &ev)) != NULL);
    char *argv[] = {"/usr/bin/python3", "-c", (char *)worker, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    if (access(argv[0], X_OK) != 0) {
        /* The test needs a program on the other end; every build machine here
         * has Python, which the worker embeds. */
        REQUIRE(access(argv[0], X_OK) == 0);
    }
    REQUIRE(child_start(s.c, argv, envp, NULL, NULL) == 0);
    unsigned long long most = 0;
    int while_asleep = -1;
    double start = monotime_now();
    while (s.frames < FRAMES && !s.corrupt && monotime_now() - start < 8) {
        loop_turn(l, 20);
        unsigned long long waiting = child_queued(s.c) - child_written(s.c);
        if (waiting > most)
            most = waiting;
        if (monotime_now() - start > 0.8 && while_asleep < 0)
            while_asleep = s.frames;
    }
    /* While the worker slept, a few replies went (what the socket holds, and
     * 8 MiB waiting), not one for each of its frames... */
    CHECK(while_asleep > 0 && while_asleep < 40);
    CHECK(most <= (8u << 20) + REPLY + 64);
    /* ...and all were answered once it read, the held-back ones included. */
    CHECK_INT(s.frames, FRAMES);
    CHECK(!s.corrupt);
    child_free(s.c);
    loop_free(l);
    free(s.reply);
}

static const struct testing_case cases[] = {
    TESTING_CASE_TIMEOUT(test_a_worker_that_does_not_read_is_not_heard, 20),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
