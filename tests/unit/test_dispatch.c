/* Unit tests for dispatch and route: the supervisor's handling of a client's
 * request and of the worker's frames, with fake sockets and a fake worker
 * (fake_kernel.h). Busy, the reply and idle come in that order for every
 * request; a reply goes to the request it answers; an unknown request gets an
 * error reply; what the worker sends that is not a well-formed frame it may
 * send is counted and dropped. */
#include <stdlib.h>
#include <string.h>

#include "fake_kernel.h"
#include "kernel/supervisor/dispatch.h"
#include "kernel/supervisor/handlers.h"
#include "kernel/supervisor/shells.h"
#include "testing.h"

static void test_supervisor_answers_between_busy_and_idle(void)
{
    struct fake f;
    fake_init(&f);
    f.worker = KERNEL_WORKER_STARTING; /* kernel_info needs no worker */
    const char *id =
        fake_request(&f, CONNECTION_SHELL, "kernel_info_request", NULL, NULL);
    CHECK_STR(fake_labels(&f, id), "busy kernel_info_reply idle");
    const struct fake_sent *r = fake_find(&f, id, "kernel_info_reply");
    REQUIRE(r != NULL);
    CHECK(r->ch == CONNECTION_SHELL);
    CHECK_STR(json_string_value(json_object_get(r->content, "status")), "ok");
    CHECK(json_object_get(r->content, "sandpit") != NULL);
    /* on control, the reply goes back on control */
    id = fake_request(&f, CONNECTION_CONTROL, "kernel_info_request", NULL, NULL);
    r = fake_find(&f, id, "kernel_info_reply");
    REQUIRE(r != NULL);
    CHECK(r->ch == CONNECTION_CONTROL);
    CHECK_INT(f.nframes, 0);
    fake_release(&f);
}

static void test_unknown_request_gets_an_error_reply(void)
{
    struct fake f;
    fake_init(&f);
    const char *id = fake_request(&f, CONNECTION_SHELL, "frobnicate_request", NULL, NULL);
    CHECK_STR(fake_labels(&f, id), "busy frobnicate_reply idle");
    const struct fake_sent *r = fake_find(&f, id, "frobnicate_reply");
    REQUIRE(r != NULL);
    CHECK_STR(json_string_value(json_object_get(r->content, "status")), "error");
    CHECK_STR(json_string_value(json_object_get(r->content, "ename")),
              "NotImplementedError");
    /* something that is not a request gets no reply, only busy and idle */
    id = fake_request(&f, CONNECTION_SHELL, "frobnicate", NULL, NULL);
    CHECK_STR(fake_labels(&f, id), "busy idle");
    CHECK_INT(f.nframes, 0);
    fake_release(&f);
}

static void test_execute_goes_to_the_worker_and_back(void)
{
    struct fake f;
    fake_init(&f);
    char id[128];
    snprintf(id, sizeof id, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"1 + 1\"}", NULL));
    CHECK_STR(fake_labels(&f, id), "busy execute_input");
    const json_t *rq = fake_last_frame(&f, LINK_REQUEST);
    REQUIRE(rq != NULL);
    struct link_request req;
    char err[256];
    REQUIRE(link_request_parse(rq, &req, err, sizeof err) == 0);
    CHECK_STR(req.shell, "");
    CHECK_STR(req.msg_type, "execute_request");
    CHECK_INT(req.execution_count, 1);
    CHECK(req.store_history && !req.silent);
    /* output, then the reply: the reply is completed by the supervisor */
    json_t *c = json_pack("{s:s, s:s}", "name", "stdout", "text", "2\n");
    fake_worker_frame(&f, link_iopub_build(&(struct link_iopub){
                              .msg_type = "stream", .parent = id, .content = c}));
    json_decref(c);
    fake_worker_reply(&f, "", id, "ok");
    CHECK_STR(fake_labels(&f, id), "busy execute_input stream execute_reply idle");
    const struct fake_sent *r = fake_find(&f, id, "execute_reply");
    REQUIRE(r != NULL);
    CHECK_INT(json_integer_value(json_object_get(r->content, "execution_count")), 1);
    CHECK_STR(json_string_value(json_object_get(r->content, "status")), "ok");
    CHECK(!kernel_any_running(&f.k));
    CHECK_INT(f.k.bad_frames, 0);
    fake_release(&f);
}

static void test_requests_wait_for_the_worker_to_say_hello(void)
{
    struct fake f;
    fake_init(&f);
    f.worker = KERNEL_WORKER_STARTING;
    char id[128];
    snprintf(id, sizeof id, "%s",
             fake_request(&f, CONNECTION_SHELL, "complete_request",
                          "{\"code\": \"pri\", \"cursor_pos\": 3}", NULL));
    CHECK_STR(fake_labels(&f, id), "");
    CHECK_INT(f.nframes, 0);
    fake_worker_text(&f,
                     "{\"type\": \"hello\", \"python_version\": \"3.99.0\", \"pid\": 7, "
                     "\"sandbox\": []}");
    CHECK(f.worker == KERNEL_WORKER_READY);
    CHECK_STR(f.k.python_version, "3.99.0");
    CHECK_STR(fake_labels(&f, id), "busy");
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 1);
    /* a second hello (code in a running worker can send one) changes nothing */
    fake_worker_text(&f,
                     "{\"type\": \"hello\", \"python_version\": \"6.6.6\", \"pid\": 7, "
                     "\"sandbox\": []}");
    CHECK_STR(f.k.python_version, "3.99.0");
    CHECK_INT(f.k.bad_frames, 1);
    fake_release(&f);
}

static void test_workers_that_cannot_start_get_requests_answered(void)
{
    struct fake f;
    fake_init(&f);
    f.worker = KERNEL_WORKER_FAILING;
    const char *id =
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"1\"}", NULL);
    CHECK_STR(fake_labels(&f, id), "busy execute_reply idle");
    const struct fake_sent *r = fake_find(&f, id, "execute_reply");
    REQUIRE(r != NULL);
    CHECK_STR(json_string_value(json_object_get(r->content, "ename")),
              "WorkerUnavailable");
    fake_release(&f);
}

static void test_replies_go_to_the_request_they_answer(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], b[128];
    fake_subshell(&f, sub, sizeof sub);
    snprintf(
        a, sizeof a, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"a\"}", NULL));
    snprintf(
        b, sizeof b, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"b\"}", sub));
    /* both run at once: the subshell does not wait for the main shell */
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 2);
    /* a reply naming a request that its shell does not run is dropped */
    fake_worker_reply(&f, sub, a, "ok");
    CHECK_INT(f.k.bad_frames, 1);
    CHECK_STR(fake_labels(&f, b), "busy execute_input");
    /* a reply for a shell that runs nothing, or does not exist, is dropped */
    fake_worker_reply(&f, "no-such-shell", a, "ok");
    CHECK_INT(f.k.bad_frames, 2);
    /* the subshell's reply ends the subshell's request, not the main one's */
    fake_worker_reply(&f, sub, b, "ok");
    CHECK_STR(fake_labels(&f, b), "busy execute_input execute_reply idle");
    CHECK_STR(fake_labels(&f, a), "busy execute_input");
    fake_worker_reply(&f, sub, b, "ok"); /* nothing runs there now */
    CHECK_INT(f.k.bad_frames, 3);
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, a), "busy execute_input execute_reply idle");
    fake_release(&f);
}

/* Code in the worker can write to the link. A reply that does not say which
 * request it answers would end whatever its shell runs, and the real answer
 * would then land on the next request: it is dropped. */
static void test_a_reply_must_name_its_request(void)
{
    struct fake f;
    fake_init(&f);
    char a[128];
    snprintf(
        a, sizeof a, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"a\"}", NULL));
    fake_worker_text(&f, "{\"type\": \"reply\", \"shell\": \"\", \"content\": "
                         "{\"status\": \"error\", \"ename\": \"Forged\"}}");
    CHECK_INT(f.k.bad_frames, 1);
    CHECK_STR(fake_labels(&f, a), "busy execute_input");
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, a), "busy execute_input execute_reply idle");
    const struct fake_sent *r = fake_find(&f, a, "execute_reply");
    CHECK_STR(json_string_value(json_object_get(r->content, "status")), "ok");
    fake_release(&f);
}

/* A worker that keeps answering requests it does not run is restarted, and the
 * cell it runs is told why. */
static void test_a_worker_that_keeps_lying_is_restarted(void)
{
    struct fake f;
    fake_init(&f);
    char a[128];
    snprintf(
        a, sizeof a, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"a\"}", NULL));
    for (int i = 0; i < 10; i++)
        fake_worker_reply(&f, "", "not-a", "ok");
    CHECK_INT(f.nrestarts, 0);
    CHECK_STR(fake_labels(&f, a), "busy execute_input");
    fake_worker_reply(&f, "", "not-a", "ok");
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "11 replies to requests it was not running") != NULL);
    CHECK_STR(fake_labels(&f, a), "busy execute_input error execute_reply idle");
    const struct fake_sent *r = fake_find(&f, a, "execute_reply");
    CHECK_STR(json_string_value(json_object_get(r->content, "ename")), "WorkerDied");
    CHECK(strstr(json_string_value(json_object_get(r->content, "evalue")), "forged") !=
          NULL);
    /* the new worker starts with a clean slate */
    fake_worker_text(&f, "{\"type\": \"hello\", \"python_version\": \"3.11\", "
                         "\"sandbox\": []}");
    CHECK_INT(f.k.lies, 0);
    fake_release(&f);
}

static void test_bad_frames_are_counted_and_dropped(void)
{
    struct fake f;
    fake_init(&f);
    size_t sent = f.nsent;
    static const char *const bad[] = {
        "not JSON",
        "{\"type\": \"bogus\"}",
        "{\"type\": \"request\", \"shell\": \"\"}", /* only the supervisor sends it */
        "{\"type\": \"iopub\", \"msg_type\": \"status\", \"content\": {}}", /* not the
                                                                               worker's */
        "{\"type\": \"iopub\", \"msg_type\": \"stream\", \"content\": []}",
        "{\"type\": \"reply\", \"shell\": \"\", \"content\": {}}", /* nothing runs */
        "{\"type\": \"input_request\", \"content\": {\"prompt\": \"\"}}", /* nothing runs
                                                                           */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        fake_worker_text(&f, bad[i]);
    CHECK_INT(f.k.bad_frames, sizeof bad / sizeof bad[0]);
    CHECK_INT(f.nsent, sent); /* nothing reached a client */
    fake_release(&f);
}

static void test_output_after_the_cell_goes_to_the_cell(void)
{
    struct fake f;
    fake_init(&f);
    char a[128];
    snprintf(
        a, sizeof a, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"t\"}", NULL));
    fake_worker_reply(&f, "", a, "ok");
    /* a thread that the cell started prints after the cell ended */
    json_t *c = json_pack("{s:s, s:s}", "name", "stdout", "text", "late\n");
    fake_worker_frame(&f, link_iopub_build(&(struct link_iopub){
                              .msg_type = "stream", .parent = a, .content = c}));
    /* output that names no request goes to the main shell's running one */
    char b[128];
    snprintf(
        b, sizeof b, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"u\"}", NULL));
    fake_worker_frame(&f, link_iopub_build(&(struct link_iopub){
                              .msg_type = "stream", .parent = NULL, .content = c}));
    json_decref(c);
    CHECK_STR(fake_labels(&f, a), "busy execute_input execute_reply idle stream");
    CHECK_STR(fake_labels(&f, b), "busy execute_input stream");
    fake_release(&f);
}

static void test_input_goes_to_the_request_that_asked(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], sub[64], b[128];
    fake_subshell(&f, sub, sizeof sub);
    snprintf(a, sizeof a, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"input()\", \"allow_stdin\": true}", NULL));
    snprintf(b, sizeof b, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"input()\", \"allow_stdin\": true}", sub));
    /* both ask; each input_request is parented to its own cell */
    fake_worker_frame(&f,
                      link_input_request_build(&(struct link_input_request){
                          .parent = a, .content = json_pack("{s:s}", "prompt", "A?")}));
    fake_worker_frame(&f,
                      link_input_request_build(&(struct link_input_request){
                          .parent = b, .content = json_pack("{s:s}", "prompt", "B?")}));
    const struct fake_sent *qa = fake_find(&f, a, "input_request");
    const struct fake_sent *qb = fake_find(&f, b, "input_request");
    REQUIRE(qa && qb);
    CHECK(qa->ch == CONNECTION_STDIN && qb->ch == CONNECTION_STDIN);
    /* the answer to B's question goes to B, then A's to A */
    fake_input_reply(&f, qb->id, "for B");
    const json_t *ir = fake_last_frame(&f, LINK_INPUT_REPLY);
    struct link_input_reply got;
    char err[256];
    REQUIRE(ir && link_input_reply_parse(ir, &got, err, sizeof err) == 0);
    CHECK_STR(got.parent, b);
    CHECK_STR(json_string_value(json_object_get(got.content, "value")), "for B");
    fake_input_reply(&f, qa->id, "for A");
    ir = fake_last_frame(&f, LINK_INPUT_REPLY);
    REQUIRE(ir && link_input_reply_parse(ir, &got, err, sizeof err) == 0);
    CHECK_STR(got.parent, a);
    /* an answer when nobody waits goes nowhere */
    fake_input_reply(&f, qa->id, "again");
    CHECK_INT(fake_count_frames(&f, LINK_INPUT_REPLY), 2);
    fake_release(&f);
}

static void test_a_lost_worker_answers_every_running_request(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], b[128], queued[128];
    fake_subshell(&f, sub, sizeof sub);
    snprintf(
        a, sizeof a, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"a\"}", NULL));
    snprintf(
        b, sizeof b, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"b\"}", sub));
    snprintf(
        queued, sizeof queued, "%s",
        fake_request(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"c\"}", sub));
    shells_worker_lost(&f.k, "The worker died.");
    CHECK_STR(fake_labels(&f, a), "busy execute_input error execute_reply idle");
    CHECK_STR(fake_labels(&f, b), "busy execute_input error execute_reply idle");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, b, "execute_reply")->content, "ename")),
              "WorkerDied");
    CHECK_STR(fake_labels(&f, queued), "busy execute_reply idle"); /* aborted */
    CHECK_STR(json_string_value(json_object_get(
                  fake_find(&f, queued, "execute_reply")->content, "status")),
              "aborted");
    CHECK_INT(f.k.nshells, 1); /* the subshell went with its thread */
    fake_release(&f);
}

/* The worker's history frame: answered over the link by its id, never to a
 * client; a query that is not one is refused with a sentence, and a reply
 * never holds more than its bound. */
static void test_the_worker_asks_for_the_history(void)
{
    struct fake f;
    fake_init(&f);
    char a[128];
    snprintf(a, sizeof a, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"x = 1\"}", NULL));
    fake_worker_reply(&f, "", a, "ok");
    size_t sent = f.nsent;
    fake_worker_text(&f, "{\"type\": \"history\", \"id\": 7, \"query\": "
                         "{\"hist_access_type\": \"range\", \"session\": 0}}");
    fake_history_wait(&f);
    const json_t *r = fake_last_frame(&f, LINK_HISTORY_REPLY);
    REQUIRE(r != NULL);
    CHECK_INT(json_integer_value(json_object_get(r, "id")), 7);
    json_t *h = json_object_get(r, "history");
    REQUIRE(json_array_size(h) == 1);
    CHECK_STR(json_string_value(json_array_get(json_array_get(h, 0), 2)), "x = 1");
    CHECK_INT(f.nsent, sent); /* nothing to a client */

    fake_worker_text(&f, "{\"type\": \"history\", \"id\": 8, \"query\": "
                         "{\"hist_access_type\": \"tail\", \"n\": -3}}");
    r = fake_last_frame(&f, LINK_HISTORY_REPLY);
    CHECK_INT(json_integer_value(json_object_get(r, "id")), 8);
    CHECK(json_object_get(r, "history") == NULL);
    CHECK(strstr(json_string_value(json_object_get(r, "error")), "\"n\"") != NULL);
    CHECK_INT(f.k.bad_frames, 0);

    /* many cells, a tail of more than the bound: the newest, as many as allowed */
    for (int i = 0; i < HANDLERS_WORKER_HISTORY_ENTRIES + 5; i++)
        history_add(&f.k.history, 100 + i, "y");
    fake_worker_text(&f, "{\"type\": \"history\", \"id\": 9, \"query\": "
                         "{\"hist_access_type\": \"tail\", \"n\": 2000000000}}");
    fake_history_wait(&f);
    r = fake_last_frame(&f, LINK_HISTORY_REPLY);
    h = json_object_get(r, "history");
    CHECK_INT(json_array_size(h), HANDLERS_WORKER_HISTORY_ENTRIES);
    CHECK_INT(json_integer_value(json_array_get(json_array_get(h, 0), 1)), 105);

    /* a frame that is not one is dropped and counted */
    fake_worker_text(&f, "{\"type\": \"history\", \"id\": \"seven\", \"query\": {}}");
    CHECK_INT(f.k.bad_frames, 1);
    CHECK_INT(fake_count_frames(&f, LINK_HISTORY_REPLY), 3);
    fake_release(&f);
}

static void ask_input(struct fake *f, const char *parent, json_t *content)
{
    fake_worker_frame(f, link_input_request_build(&(struct link_input_request){
                             .parent = parent, .content = content}));
}

/* What an input request from the worker brings the client is bounded: none for a
 * client that takes no input, one at a time, a prompt of at most 16 KiB and a
 * flag, nothing else. */
static void test_input_requests_are_bounded(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"input()\"}", NULL));
    ask_input(&f, a, json_pack("{s:s}", "prompt", "no"));
    CHECK(fake_find(&f, a, "input_request") == NULL);
    CHECK_INT(f.k.bad_frames, 1);
    fake_worker_reply(&f, "", a, "ok");
    snprintf(b, sizeof b, "%s",
             fake_request(&f, CONNECTION_SHELL, "execute_request",
                          "{\"code\": \"input()\", \"allow_stdin\": true}", NULL));
    char *big = malloc(100000);
    REQUIRE(big != NULL);
    memset(big, 'p', 99999);
    big[99999] = 0;
    ask_input(&f, b,
              json_pack("{s:s, s:b, s:s}", "prompt", big, "password", 1, "junk", big));
    ask_input(&f, b, json_pack("{s:s}", "prompt", "again"));
    free(big);
    const struct fake_sent *q = fake_find(&f, b, "input_request");
    REQUIRE(q != NULL);
    CHECK_INT(json_string_length(json_object_get(q->content, "prompt")), 16 << 10);
    CHECK(json_is_true(json_object_get(q->content, "password")));
    CHECK_INT(json_object_size(q->content), 2);
    CHECK_INT(f.k.bad_frames, 2);
    size_t asked = 0;
    for (size_t i = 0; i < f.nsent; i++)
        asked += strcmp(f.sent[i].label, "input_request") == 0;
    CHECK_INT(asked, 1);
    fake_release(&f);
}

/* One history query of the worker's is answered at a time: a second one before
 * the worker has taken the first answer is refused with a sentence (its runtime
 * never asks so), and the next after it is answered again. */
static void test_one_history_query_at_a_time(void)
{
    struct fake f;
    fake_init(&f);
    history_add(&f.k.history, 1, "x = 1");
#define QUERY                                                                            \
    "{\"type\": \"history\", \"id\": %d, \"query\": {\"hist_access_type\": \"tail\", "   \
    "\"n\": 10}}"
    char text[160];
    f.not_reading = true;
    for (int id = 1; id <= 3; id++) {
        snprintf(text, sizeof text, QUERY, id);
        fake_worker_text(&f, text);
        fake_history_wait(&f);
        const json_t *r = fake_last_frame(&f, LINK_HISTORY_REPLY);
        REQUIRE(r != NULL);
        CHECK_INT(json_integer_value(json_object_get(r, "id")), id);
        CHECK((json_object_get(r, "history") != NULL) == (id == 1));
        const char *e = json_string_value(json_object_get(r, "error"));
        if (id > 1)
            CHECK(e && strstr(e, "one is answered at a time") != NULL);
    }
    f.written = f.queued; /* the worker has read it all */
    snprintf(text, sizeof text, QUERY, 4);
    fake_worker_text(&f, text);
    fake_history_wait(&f);
    CHECK(json_object_get(fake_last_frame(&f, LINK_HISTORY_REPLY), "history") != NULL);
    CHECK_INT(f.k.bad_frames, 0);
    CHECK_INT(f.nrestarts, 0);
    fake_release(&f);
#undef QUERY
}

/* A message whose header is readable but not the rest, as msg_parse leaves it. */
static void send_unreadable(struct fake *f, enum connection_channel ch, const char *type)
{
    static struct msg_session client;
    if (!client.session[0])
        REQUIRE(msg_session_init(&client, "client") == 0);
    json_t *c = json_object();
    struct msg *m = msg_make(&client, type, NULL, &c, false);
    REQUIRE(m != NULL);
    dispatch_unreadable(&f->k, &m, ch, "its content is not an object");
    CHECK(m == NULL);
    msg_free(m);
}

/* Every way a request can go begins it once (busy) and ends it once (idle),
 * in that order: fake_check_status holds each parent to it, and the kernel's
 * counts to the number of requests. */
/* The request id fake_request gave, with *n counted up: one more request. */
static const char *counted(size_t *n, const char *id)
{
    (*n)++;
    return id;
}

static void test_each_request_is_begun_and_ended_once(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], b[128];
    size_t n = 0;
#define REQ(ch, type, content, s) counted(&n, fake_request(&f, ch, type, content, s))
#define KEEP(buf, expr)           snprintf(buf, sizeof buf, "%s", expr)
    /* answered by the supervisor, on shell and control; unknown; kept (history) */
    REQ(CONNECTION_SHELL, "kernel_info_request", NULL, NULL);
    REQ(CONNECTION_CONTROL, "kernel_info_request", NULL, NULL);
    REQ(CONNECTION_SHELL, "frobnicate_request", NULL, NULL);
    REQ(CONNECTION_SHELL, "history_request", "{\"hist_access_type\": \"tail\", \"n\": 1}",
        NULL);
    fake_history_wait(&f);
    /* answered by the worker: ok; an error under stop_on_error, which aborts the
     * cell behind it but not the completion */
    KEEP(a, REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"1\"}", NULL));
    fake_worker_reply(&f, "", a, "ok");
    KEEP(a, REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"x\"}", NULL));
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"2\"}", NULL);
    KEEP(b, REQ(CONNECTION_SHELL, "complete_request",
                "{\"code\": \"pri\", \"cursor_pos\": 3}", NULL));
    fake_worker_reply(&f, "", a, "error");
    fake_worker_reply(&f, "", b, "ok");
    /* a comm message: no reply, busy and idle still */
    KEEP(a,
         REQ(CONNECTION_SHELL, "comm_msg", "{\"comm_id\": \"c\", \"data\": {}}", NULL));
    fake_worker_reply(&f, "", a, "ok");
    /* refused in its turn: no code, and the cell behind it aborted; refused at
     * once: no such subshell, unreadable (on stdin, or for a message that is
     * no request: nothing) */
    KEEP(a, REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"0\"}", NULL));
    REQ(CONNECTION_SHELL, "execute_request", "{}", NULL);
    KEEP(b, REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"3\"}", NULL));
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, b), "busy execute_reply idle");
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"4\"}", "no-such-subshell");
    n++;
    send_unreadable(&f, CONNECTION_SHELL, "execute_request");
    send_unreadable(&f, CONNECTION_STDIN, "input_request");
    send_unreadable(&f, CONNECTION_SHELL, "comm_msg");
    /* a subshell deleted with a cell running in it and one waiting */
    n++;
    fake_subshell(&f, sub, sizeof sub);
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"5\"}", sub);
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"6\"}", sub);
    char del[128];
    snprintf(del, sizeof del, "{\"subshell_id\": \"%s\"}", sub);
    REQ(CONNECTION_CONTROL, "delete_subshell_request", del, NULL);
    /* lost with the worker (and the cell behind it aborted), then answered
     * while workers cannot start */
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"7\"}", NULL);
    KEEP(b, REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"8\"}", NULL));
    shells_worker_lost(&f.k, "The worker died.");
    CHECK_STR(fake_labels(&f, b), "busy execute_reply idle");
    f.worker = KERNEL_WORKER_FAILING;
    shells_pump(&f.k);
    REQ(CONNECTION_SHELL, "execute_request", "{\"code\": \"9\"}", NULL);
#undef REQ
#undef KEEP
    CHECK(!kernel_any_running(&f.k));
    CHECK_INT(fake_check_status(&f), n);
    CHECK_INT(f.k.requests_begun, n);
    CHECK_INT(f.k.requests_ended, n);
    fake_release(&f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_supervisor_answers_between_busy_and_idle),
    TESTING_CASE(test_unknown_request_gets_an_error_reply),
    TESTING_CASE(test_execute_goes_to_the_worker_and_back),
    TESTING_CASE(test_requests_wait_for_the_worker_to_say_hello),
    TESTING_CASE(test_workers_that_cannot_start_get_requests_answered),
    TESTING_CASE(test_replies_go_to_the_request_they_answer),
    TESTING_CASE(test_a_reply_must_name_its_request),
    TESTING_CASE(test_a_worker_that_keeps_lying_is_restarted),
    TESTING_CASE(test_bad_frames_are_counted_and_dropped),
    TESTING_CASE(test_output_after_the_cell_goes_to_the_cell),
    TESTING_CASE(test_input_goes_to_the_request_that_asked),
    TESTING_CASE(test_a_lost_worker_answers_every_running_request),
    TESTING_CASE(test_the_worker_asks_for_the_history),
    TESTING_CASE(test_one_history_query_at_a_time),
    TESTING_CASE(test_input_requests_are_bounded),
    TESTING_CASE(test_each_request_is_begun_and_ended_once),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
