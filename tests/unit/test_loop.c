/* Unit tests for the event loop: time events on a clock the test moves, file
 * events on pipes, handlers that add and remove registrations while the loop
 * walks them, ranks, the hook before each wait, stopping, and ZeroMQ sockets
 * (asked for their events only when they may have changed). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/supervisor/loop.h"
#include "testing.h"

static double now = 100;

static double clock_fn(void)
{
    return now;
}

/* What the handlers saw, in order. */
static char trace[1024];

static void note(const char *what)
{
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof trace - n, "%s%s", n ? " " : "", what);
}

static double once(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    note(data);
    return LOOP_NOMORE;
}

static int repeats;

static double every_second(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    note(data);
    return ++repeats < 3 ? 1 : LOOP_NOMORE;
}

static void test_timers_follow_the_clock(void)
{
    struct loop *l = loop_new(clock_fn);
    REQUIRE(l != NULL);
    CHECK(loop_now(l) == 100);
    loop_add_timer(l, 2, once, "two");
    loop_add_timer(l, 1, once, "one");
    long long gone = loop_add_timer(l, 1.5, once, "removed");
    loop_add_timer(l, 0.5, every_second, "tick");
    loop_del_timer(l, gone);
    REQUIRE(loop_turn(l, 0) == 0);
    CHECK_STR(trace, "");
    now += 1;
    REQUIRE(loop_turn(l, 0) == 0);
    CHECK_STR(trace, "one tick");
    now += 1;
    REQUIRE(loop_turn(l, 0) == 0);
    CHECK_STR(trace, "one tick two tick");
    for (int i = 0; i < 5; i++) {
        now += 1;
        REQUIRE(loop_turn(l, 0) == 0);
    }
    CHECK_STR(trace, "one tick two tick tick"); /* NOMORE after three */
    loop_free(l);
}

static long long other;

static double removes_the_other(struct loop *l, long long id, void *data)
{
    (void)id;
    note(data);
    loop_del_timer(l, other);
    loop_add_timer(l, 0, once, "added"); /* due, but waits for the next turn */
    return LOOP_NOMORE;
}

static double removes_itself(struct loop *l, long long id, void *data)
{
    note(data);
    loop_del_timer(l, id);
    return 5; /* ignored: it is gone */
}

static void test_timers_added_and_removed_by_timers(void)
{
    struct loop *l = loop_new(clock_fn);
    loop_add_timer(l, 1, removes_the_other, "first");
    other = loop_add_timer(l, 1, once, "other");
    loop_add_timer(l, 1, removes_itself, "self");
    now += 1;
    loop_turn(l, 0);
    CHECK_STR(trace, "first self");
    loop_turn(l, 0);
    CHECK_STR(trace, "first self added");
    now += 10;
    loop_turn(l, 0);
    CHECK_STR(trace, "first self added");
    loop_free(l);
}

static int pipes[3][2];
static long long ids[3];

static void on_readable(struct loop *l, long long id, int events, void *data)
{
    char buf[16];
    CHECK(events & LOOP_READABLE);
    int i = (int)(long)data;
    CHECK(id == ids[i]);
    CHECK(read(pipes[i][0], buf, sizeof buf) > 0);
    char name[8];
    snprintf(name, sizeof name, "fd%d", i);
    note(name);
    if (i == 2) /* the handler of rank 0 removes the one of rank 1 */
        loop_del_file(l, ids[1]);
}

static void test_file_events_in_rank_order(void)
{
    struct loop *l = loop_new(clock_fn);
    for (int i = 0; i < 3; i++)
        REQUIRE(pipe(pipes[i]) == 0);
    /* registered in the order 0, 1, 2 with ranks 2, 1, 0 */
    for (int i = 0; i < 3; i++)
        ids[i] = loop_add_fd(l, pipes[i][0], LOOP_READABLE, 2 - i, on_readable,
                             (void *)(long)i);
    for (int i = 0; i < 3; i++)
        REQUIRE(write(pipes[i][1], "x", 1) == 1);
    REQUIRE(loop_turn(l, 1000) == 0);
    /* fd1 was ready too, but fd2's handler removed it first */
    CHECK_STR(trace, "fd2 fd0");
    trace[0] = 0;
    REQUIRE(write(pipes[1][1], "x", 1) == 1);
    REQUIRE(write(pipes[0][1], "x", 1) == 1);
    REQUIRE(loop_turn(l, 1000) == 0);
    CHECK_STR(trace, "fd0");
    loop_free(l);
}

static int writable_calls;

static void on_writable(struct loop *l, long long id, int events, void *data)
{
    (void)data;
    if (events & LOOP_WRITABLE) {
        writable_calls++;
        loop_set_events(l, id,
                        LOOP_READABLE); /* what worker_process.c does once drained */
    }
}

static void test_writable_only_while_asked(void)
{
    struct loop *l = loop_new(clock_fn);
    int p[2];
    REQUIRE(pipe(p) == 0);
    long long id = loop_add_fd(l, p[1], LOOP_READABLE, 0, on_writable, NULL);
    loop_turn(l, 0);
    CHECK_INT(writable_calls, 0);
    CHECK_INT(loop_set_events(l, id, LOOP_READABLE | LOOP_WRITABLE), 0);
    loop_turn(l, 0);
    CHECK_INT(writable_calls, 1);
    loop_turn(l, 0);
    CHECK_INT(writable_calls, 1);
    CHECK_INT(loop_set_events(l, id + 100, LOOP_WRITABLE), -ENOENT);
    loop_free(l);
}

static int hooks;

static void hook(struct loop *l, void *data)
{
    (void)data;
    if (++hooks == 3)
        loop_stop(l);
}

static double stop_now(struct loop *l, long long id, void *data)
{
    (void)id;
    (void)data;
    loop_stop(l);
    return LOOP_NOMORE;
}

static double often(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    (void)data;
    return 0.001;
}

static void test_the_hook_runs_before_each_wait_and_stop_ends_the_run(void)
{
    struct loop *l = loop_new(NULL); /* the real clock */
    loop_set_before_wait(l, hook, NULL);
    loop_add_timer(l, 0, often, NULL); /* something to wait for, every turn */
    CHECK_INT(loop_run(l), 0);
    CHECK_INT(hooks, 3);
    CHECK(loop_stopped(l));
    loop_free(l);

    l = loop_new(NULL);
    loop_add_timer(l, 0.01, stop_now, NULL); /* loop_run waits for it */
    CHECK_INT(loop_run(l), 0);
    CHECK(loop_stopped(l));
    loop_free(l);
}

static int socket_reads;

/* Reads one message only, as a handler whose batch is done. */
static void read_one(struct loop *l, long long id, int events, void *data)
{
    (void)l;
    (void)id;
    char buf[16];
    if ((events & LOOP_READABLE) && zmq_recv(data, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
        socket_reads++;
}

static void test_sockets_fire_when_they_may_have_changed(void)
{
    void *ctx = zmq_ctx_new();
    void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
    REQUIRE(zmq_bind(a, "inproc://loop-test") == 0);
    REQUIRE(zmq_connect(b, "inproc://loop-test") == 0);
    struct loop *l = loop_new(NULL);
    REQUIRE(loop_add_socket(l, a, 0, read_one, a) > 0);
    REQUIRE(loop_turn(l, 0) == 0); /* asked once at registration: nothing */
    CHECK_INT(socket_reads, 0);

    /* Its descriptor fires; the handler reads one of two, and the loop asks
     * again afterwards, so the second is read with no new signal. */
    REQUIRE(zmq_send(b, "one", 3, 0) == 3);
    REQUIRE(zmq_send(b, "two", 3, 0) == 3);
    REQUIRE(loop_turn(l, 1000) == 0);
    CHECK_INT(socket_reads, 1);
    REQUIRE(loop_turn(l, 1000) == 0);
    CHECK_INT(socket_reads, 2);
    REQUIRE(loop_turn(l, 0) == 0);
    CHECK_INT(socket_reads, 2);

    /* A message whose news the owner took by using the socket (here by asking
     * its events, as a send may): the descriptor stays quiet, and only
     * loop_socket_used makes the loop look. */
    REQUIRE(zmq_send(b, "three", 5, 0) == 5);
    int ev = 0;
    size_t len = sizeof ev;
    REQUIRE(zmq_getsockopt(a, ZMQ_EVENTS, &ev, &len) == 0);
    CHECK(ev & ZMQ_POLLIN);
    REQUIRE(loop_turn(l, 50) == 0);
    CHECK_INT(socket_reads, 2);
    loop_socket_used(l, a);
    REQUIRE(loop_turn(l, 1000) == 0);
    CHECK_INT(socket_reads, 3);

    loop_free(l);
    int zero = 0;
    zmq_setsockopt(a, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(b, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_timers_follow_the_clock),
    TESTING_CASE(test_timers_added_and_removed_by_timers),
    TESTING_CASE(test_file_events_in_rank_order),
    TESTING_CASE(test_writable_only_while_asked),
    TESTING_CASE(test_the_hook_runs_before_each_wait_and_stop_ends_the_run),
    TESTING_CASE(test_sockets_fire_when_they_may_have_changed),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
