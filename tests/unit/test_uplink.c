/* Unit tests for the worker's end of the link from several threads at once, in
 * a process of their own each (the link is fd 3): frames sent by threads
 * together arrive whole and in each thread's order, and the turn passes the
 * supervisor's frames to the reader thread only while a cell runs and back to
 * the main thread after. Built with ThreadSanitizer too (make tsan-test), which
 * reports any access to the link's state that its locks do not order. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kernel/link/link.h"
#include "kernel/worker/uplink.h"
#include "testing.h"

static int sup = -1; /* the supervisor's end of the link */

static void start(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    if (sv[0] != UPLINK_FD) { /* it is fd 3 itself if that was free */
        REQUIRE(dup2(sv[0], UPLINK_FD) == UPLINK_FD);
        close(sv[0]);
    }
    sup = sv[1];
    uplink_init();
}

/* --- sends from several threads ---------------------------------------------------- */

#define SENDERS 4
#define FRAMES  300

static void *send_frames(void *arg)
{
    int id = (int)(long)arg;
    char text[64];
    for (int i = 0; i < FRAMES; i++) {
        int n = snprintf(text, sizeof text, "{\"sender\": %d, \"n\": %d}", id, i);
        if (uplink_send(text, (size_t)n, NULL, 0) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_frames_sent_by_threads_together_arrive_whole(void)
{
    start();
    pthread_t t[SENDERS];
    for (long i = 0; i < SENDERS; i++)
        REQUIRE(pthread_create(&t[i], NULL, send_frames, (void *)i) == 0);
    struct link_reader r;
    link_reader_init(&r);
    int next[SENDERS] = {0}, got = 0;
    while (got < SENDERS * FRAMES) {
        struct link_frame f;
        int rc = link_reader_next(&r, &f);
        REQUIRE(rc >= 0);
        if (rc == 0) {
            struct pollfd p = {.fd = sup, .events = POLLIN};
            REQUIRE(poll(&p, 1, 5000) == 1);
            REQUIRE(link_reader_fill(&r, sup) > 0);
            continue;
        }
        int id = -1, n = -1;
        CHECK(sscanf(f.json, "{\"sender\": %d, \"n\": %d}", &id, &n) == 2);
        REQUIRE(id >= 0 && id < SENDERS);
        CHECK_INT(n, next[id]); /* each thread's frames in its order */
        next[id] = n + 1;
        got++;
        link_frame_release(&f);
    }
    for (int i = 0; i < SENDERS; i++) {
        void *failed;
        REQUIRE(pthread_join(t[i], &failed) == 0);
        CHECK(failed == NULL);
    }
    link_reader_release(&r);
}

/* --- the turn ------------------------------------------------------------------------
 */

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static char seen[8][32]; /* (seen_mu) what the reader thread took, in order */
static int nseen;        /* (seen_mu) */

static void *read_in_turn(void *arg)
{
    (void)arg;
    for (;;) {
        struct link_frame f;
        if (uplink_recv_in_turn(&f) != 1)
            return NULL;
        pthread_mutex_lock(&seen_mu);
        if (nseen < 8)
            snprintf(seen[nseen++], sizeof seen[0], "%s", f.json);
        pthread_mutex_unlock(&seen_mu);
        link_frame_release(&f);
    }
}

static int seen_count(void)
{
    pthread_mutex_lock(&seen_mu);
    int n = nseen;
    pthread_mutex_unlock(&seen_mu);
    return n;
}

static void put(const char *json)
{
    REQUIRE(link_write_frame(sup, json, strlen(json), NULL, 0) == 0);
}

/* The main thread's read of the next frame, which must be want. */
static void main_reads(const char *want)
{
    struct link_frame f;
    REQUIRE(uplink_recv(&f, true) == 1);
    CHECK_STR(f.json, want);
    link_frame_release(&f);
}

static void test_the_turn_gives_frames_to_the_reader_only_while_a_cell_runs(void)
{
    start();
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, read_in_turn, NULL) == 0);
    put("\"before\"");
    main_reads("\"before\""); /* between cells, the main thread's */
    for (int cell = 0; cell < 3; cell++) {
        uplink_give_turn();
        put("\"during 1\"");
        put("\"during 2\"");
        /* Bounded in time, as a guard against a hang, not a measure. */
        struct timespec pause = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 300 && seen_count() < 2 * (cell + 1); i++)
            nanosleep(&pause, NULL);
        uplink_take_turn();
        CHECK_INT(seen_count(), 2 * (cell + 1));
        put("\"after\"");
        main_reads("\"after\""); /* the reader thread holds no turn now */
        CHECK_INT(seen_count(), 2 * (cell + 1));
    }
    pthread_mutex_lock(&seen_mu);
    for (int i = 0; i < nseen; i++)
        CHECK_STR(seen[i], i % 2 ? "\"during 2\"" : "\"during 1\"");
    pthread_mutex_unlock(&seen_mu);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_frames_sent_by_threads_together_arrive_whole),
    TESTING_CASE(test_the_turn_gives_frames_to_the_reader_only_while_a_cell_runs),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
