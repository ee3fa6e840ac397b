/* Unit tests for the shells' queues, with fake sockets and a fake worker
 * (fake_kernel.h): one request at a time per shell, subshells at once beside
 * the main shell, control requests first, stop_on_error aborting the execute
 * requests that wait behind a failed one, subshells made and deleted, replies
 * on a shell in the order of its requests, restarts. */
#include <stdio.h>
#include <string.h>

#include "fake_kernel.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/shells.h"
#include "testing.h"

#define EXEC(code) "{\"code\": \"" code "\"}"

/* Copies a request's msg_id out of fake_request's static buffer. */
#define SEND(f, buf, ...) snprintf(buf, sizeof buf, "%s", fake_request(f, __VA_ARGS__))

static const char *reply_status(const struct fake *f, const char *id, const char *type)
{
    const struct fake_sent *r = fake_find(f, id, type);
    return r ? json_string_value(json_object_get(r->content, "status")) : NULL;
}

static void test_one_request_at_a_time_per_shell(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 1);
    CHECK_STR(fake_labels(&f, b), ""); /* waiting: not even busy */
    fake_worker_reply(&f, "", a, "ok");
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 2);
    CHECK_STR(fake_labels(&f, b), "busy execute_input");
    fake_release(&f);
}

static void test_stop_on_error_aborts_the_queued_cells(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], c[128], d[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("1/0"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    SEND(&f, c, CONNECTION_SHELL, "complete_request",
         "{\"code\": \"x\", \"cursor_pos\": 1}", NULL);
    SEND(&f, d, CONNECTION_SHELL, "execute_request", EXEC("d"), NULL);
    fake_worker_reply(&f, "", a, "error");
    CHECK_STR(reply_status(&f, a, "execute_reply"), "error");
    /* the cells behind it are answered aborted without running... */
    CHECK_STR(fake_labels(&f, b), "busy execute_reply idle");
    CHECK_STR(reply_status(&f, b, "execute_reply"), "aborted");
    CHECK_STR(reply_status(&f, d, "execute_reply"), "aborted");
    /* ...and what is not a cell runs */
    CHECK_STR(fake_labels(&f, c), "busy");
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 2);
    fake_release(&f);
}

static void test_without_stop_on_error_the_next_cell_runs(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request",
         "{\"code\": \"1/0\", \"stop_on_error\": false}", NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    fake_worker_reply(&f, "", a, "error");
    CHECK_STR(fake_labels(&f, b), "busy execute_input");
    /* a silent cell's error does not abort either */
    char c[128], d[128];
    fake_worker_reply(&f, "", b, "ok");
    SEND(&f, c, CONNECTION_SHELL, "execute_request",
         "{\"code\": \"1/0\", \"silent\": true}", NULL);
    SEND(&f, d, CONNECTION_SHELL, "execute_request", EXEC("d"), NULL);
    fake_worker_reply(&f, "", c, "error");
    CHECK_STR(fake_labels(&f, d), "busy execute_input");
    fake_release(&f);
}

static void test_a_failed_subshell_cell_aborts_only_its_own_queue(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], main_next[128], b[128], sub_next[128];
    fake_subshell(&f, sub, sizeof sub);
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, main_next, CONNECTION_SHELL, "execute_request", EXEC("m"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("1/0"), sub);
    SEND(&f, sub_next, CONNECTION_SHELL, "execute_request", EXEC("s"), sub);
    fake_worker_reply(&f, sub, b, "error");
    CHECK_STR(reply_status(&f, sub_next, "execute_reply"), "aborted");
    CHECK_STR(fake_labels(&f, main_next), "");
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, main_next), "busy execute_input");
    fake_release(&f);
}

static void test_subshells_run_beside_the_main_shell(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], b[128];
    fake_subshell(&f, sub, sizeof sub);
    const json_t *made = fake_last_frame(&f, LINK_SUBSHELL);
    struct link_subshell s;
    char err[256];
    REQUIRE(made && link_subshell_parse(made, &s, err, sizeof err) == 0);
    CHECK(s.op == LINK_SUBSHELL_CREATE);
    CHECK_STR(s.id, sub);
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), sub);
    CHECK_INT(fake_count_frames(&f, LINK_REQUEST), 2);
    struct link_request req;
    REQUIRE(link_request_parse(fake_last_frame(&f, LINK_REQUEST), &req, err,
                               sizeof err) == 0);
    CHECK_STR(req.shell, sub);
    /* the execution count is the kernel's, across shells */
    CHECK_INT(req.execution_count, 2);
    char list[128];
    SEND(&f, list, CONNECTION_CONTROL, "list_subshell_request", NULL, NULL);
    const json_t *ids = json_object_get(
        fake_find(&f, list, "list_subshell_reply")->content, "subshell_id");
    CHECK_INT(json_array_size(ids), 1);
    CHECK_STR(json_string_value(json_array_get(ids, 0)), sub);
    fake_release(&f);
}

static void test_control_requests_jump_the_queue(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], c[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    SEND(&f, c, CONNECTION_CONTROL, "inspect_request",
         "{\"code\": \"x\", \"cursor_pos\": 1}", NULL);
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, c), "busy");
    CHECK_STR(fake_labels(&f, b), "");
    fake_worker_reply(&f, "", c, "ok");
    const struct fake_sent *r = fake_find(&f, c, "inspect_reply");
    REQUIRE(r != NULL);
    CHECK(r->ch == CONNECTION_CONTROL);
    CHECK_STR(fake_labels(&f, b), "busy execute_input");
    fake_release(&f);
}

/* Control requests go before the shell's, and keep their own order: the first
 * sent is the first served. */
static void test_control_requests_keep_their_order(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], c1[128], c2[128], c3[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    SEND(&f, c1, CONNECTION_CONTROL, "inspect_request",
         "{\"code\": \"x\", \"cursor_pos\": 1}", NULL);
    SEND(&f, c2, CONNECTION_CONTROL, "inspect_request",
         "{\"code\": \"y\", \"cursor_pos\": 1}", NULL);
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, c1), "busy");
    CHECK_STR(fake_labels(&f, c2), "");
    /* one more while the first runs: after the second, before the shell's */
    SEND(&f, c3, CONNECTION_CONTROL, "complete_request",
         "{\"code\": \"z\", \"cursor_pos\": 1}", NULL);
    fake_worker_reply(&f, "", c1, "ok");
    CHECK_STR(fake_labels(&f, c2), "busy");
    CHECK_STR(fake_labels(&f, c3), "");
    fake_worker_reply(&f, "", c2, "ok");
    CHECK_STR(fake_labels(&f, c3), "busy");
    CHECK_STR(fake_labels(&f, b), "");
    fake_worker_reply(&f, "", c3, "ok");
    CHECK_STR(fake_labels(&f, b), "busy execute_input");
    fake_worker_reply(&f, "", b, "ok");
    /* and a queue that only the control requests left behind takes the next */
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("c"), NULL);
    CHECK_STR(fake_labels(&f, a), "busy execute_input");
    fake_release(&f);
}

static void test_requests_for_unknown_subshells_and_bad_cells(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), "no-such-subshell");
    CHECK_STR(fake_labels(&f, a), "busy execute_reply idle");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, a, "execute_reply")->content, "ename")),
              "KeyError");
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"silent\": false}", NULL);
    CHECK_STR(fake_labels(&f, b), "busy execute_reply idle");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, b, "execute_reply")->content, "ename")),
              "ValueError");
    CHECK_INT(f.nframes, 0);
    fake_release(&f);
}

static void test_deleting_a_subshell_answers_its_requests(void)
{
    struct fake f;
    fake_init(&f);
    char sub[64], a[128], b[128], del[128];
    fake_subshell(&f, sub, sizeof sub);
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), sub);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), sub);
    char content[128];
    snprintf(content, sizeof content, "{\"subshell_id\": \"%s\"}", sub);
    SEND(&f, del, CONNECTION_CONTROL, "delete_subshell_request", content, NULL);
    CHECK_STR(reply_status(&f, del, "delete_subshell_reply"), "ok");
    CHECK_STR(fake_labels(&f, a), "busy execute_input execute_reply idle");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, a, "execute_reply")->content, "ename")),
              "SubshellDeleted");
    CHECK_STR(reply_status(&f, b, "execute_reply"), "aborted");
    struct link_subshell s;
    char err[256];
    REQUIRE(link_subshell_parse(fake_last_frame(&f, LINK_SUBSHELL), &s, err,
                                sizeof err) == 0);
    CHECK(s.op == LINK_SUBSHELL_DELETE);
    CHECK_INT(f.k.nshells, 1);
    /* the worker's late reply for it is dropped */
    fake_worker_reply(&f, sub, a, "ok");
    CHECK_INT(f.k.bad_frames, 1);
    /* deleting it again is an error */
    SEND(&f, del, CONNECTION_CONTROL, "delete_subshell_request", content, NULL);
    CHECK_STR(reply_status(&f, del, "delete_subshell_reply"), "error");
    fake_release(&f);
}

static void test_at_most_fifteen_subshells(void)
{
    struct fake f;
    fake_init(&f);
    for (int i = 1; i < KERNEL_MAX_SHELLS; i++) {
        char sub[64];
        fake_subshell(&f, sub, sizeof sub);
    }
    char id[128];
    SEND(&f, id, CONNECTION_CONTROL, "create_subshell_request", NULL, NULL);
    CHECK_STR(reply_status(&f, id, "create_subshell_reply"), "error");
    CHECK_INT(f.k.nshells, KERNEL_MAX_SHELLS);
    fake_release(&f);
}

static void test_execution_count_and_history(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], c[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a = 1"), NULL);
    fake_worker_reply(&f, "", a, "ok");
    /* not stored: no count of its own (its execute_input shows the next one,
     * its reply the last stored cell's, as ipykernel answers), no history */
    SEND(&f, b, CONNECTION_SHELL, "execute_request",
         "{\"code\": \"b\", \"store_history\": false}", NULL);
    fake_worker_reply(&f, "", b, "ok");
    /* silent: no execute_input either */
    SEND(&f, c, CONNECTION_SHELL, "execute_request",
         "{\"code\": \"c\", \"silent\": true}", NULL);
    fake_worker_reply(&f, "", c, "ok");
    CHECK_INT(json_integer_value(json_object_get(
                  fake_find(&f, a, "execute_reply")->content, "execution_count")),
              1);
    CHECK_INT(json_integer_value(json_object_get(
                  fake_find(&f, b, "execute_reply")->content, "execution_count")),
              1);
    CHECK_INT(json_integer_value(json_object_get(
                  fake_find(&f, b, "execute_input")->content, "execution_count")),
              2);
    CHECK_STR(fake_labels(&f, c), "busy execute_reply idle");
    CHECK_INT(f.k.execution_count, 1);
    struct history_query q = {.access = HISTORY_TAIL, .n = 10};
    char err[128];
    json_t *h = history_query(&f.k.history, &q, 0, 0, err, sizeof err);
    REQUIRE(h && json_array_size(h) == 1);
    CHECK_STR(json_string_value(json_array_get(json_array_get(h, 0), 2)), "a = 1");
    json_decref(h);
    fake_release(&f);
}

static void test_restart_in_place_aborts_the_queues_and_starts_counting_again(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], r[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    snprintf(r, sizeof r, "%s",
             fake_request_md(&f, CONNECTION_CONTROL, "shutdown_request",
                             "{\"restart\": true}", "{\"sandpit\": {\"in_place\": true}}",
                             NULL));
    CHECK_STR(fake_labels(&f, r), "busy shutdown_reply idle");
    CHECK_INT(f.nrestarts, 1);
    CHECK(!loop_stopped(f.loop));
    CHECK_STR(reply_status(&f, b, "execute_reply"), "aborted");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, a, "execute_reply")->content, "ename")),
              "WorkerDied");
    CHECK_INT(f.k.execution_count, 0);
    CHECK_INT(f.k.history.session, 2);
    fake_release(&f);
}

/* As the spec says: a restart is the client's to do, with a new process. */
static void test_a_restart_request_ends_the_kernel(void)
{
    struct fake f;
    fake_init(&f);
    char r[128];
    SEND(&f, r, CONNECTION_CONTROL, "shutdown_request", "{\"restart\": true}", NULL);
    CHECK_STR(fake_labels(&f, r), "busy shutdown_reply idle");
    CHECK(json_is_true(
        json_object_get(fake_find(&f, r, "shutdown_reply")->content, "restart")));
    CHECK(loop_stopped(f.loop));
    CHECK_INT(f.nrestarts, 0);
    fake_release(&f);
}

static void test_replies_on_a_shell_come_in_request_order(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], i[128], h[128], u[128], c[128], x[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, i, CONNECTION_SHELL, "kernel_info_request", NULL, NULL);
    SEND(&f, h, CONNECTION_SHELL, "history_request", "{\"hist_access_type\": \"tail\"}",
         NULL);
    SEND(&f, u, CONNECTION_SHELL, "frobnicate_request", NULL, NULL);
    /* on control, at once; an interrupt, at once wherever it comes */
    SEND(&f, c, CONNECTION_CONTROL, "kernel_info_request", NULL, NULL);
    SEND(&f, x, CONNECTION_SHELL, "interrupt_request", NULL, NULL);
    CHECK_STR(fake_labels(&f, c), "busy kernel_info_reply idle");
    CHECK_STR(fake_labels(&f, x), "busy interrupt_reply idle");
    CHECK_STR(fake_labels(&f, i), "");
    CHECK_STR(fake_labels(&f, h), "");
    CHECK_STR(fake_labels(&f, u), "");
    size_t before = f.nsent;
    fake_worker_reply(&f, "", a, "ok");
    /* the history is answered on its thread: what follows it waits for it */
    CHECK_STR(fake_labels(&f, h), "busy");
    CHECK_STR(fake_labels(&f, u), "");
    fake_history_wait(&f);
    /* the execute's reply and idle first, then the others in turn */
    const char *want[] = {
        "execute_reply", "idle", "busy", "kernel_info_reply", "idle", "busy",
        "history_reply", "idle", "busy", "frobnicate_reply",  "idle"};
    REQUIRE(f.nsent - before == sizeof want / sizeof want[0]);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        CHECK_STR(f.sent[before + k].label, want[k]);
    CHECK_STR(reply_status(&f, h, "history_reply"), "ok");
    fake_release(&f);
}

static void test_connect_reply_gives_the_ports(void)
{
    struct fake f;
    fake_init(&f);
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        f.k.ports[ch] = 5000 + ch;
    char r[128];
    SEND(&f, r, CONNECTION_SHELL, "connect_request", NULL, NULL);
    const struct fake_sent *s = fake_find(&f, r, "connect_reply");
    REQUIRE(s != NULL);
    CHECK_STR(json_string_value(json_object_get(s->content, "status")), "ok");
    CHECK_INT(json_integer_value(json_object_get(s->content, "shell_port")), 5000);
    CHECK_INT(json_integer_value(json_object_get(s->content, "iopub_port")), 5001);
    CHECK_INT(json_integer_value(json_object_get(s->content, "stdin_port")), 5002);
    CHECK_INT(json_integer_value(json_object_get(s->content, "control_port")), 5003);
    CHECK_INT(json_integer_value(json_object_get(s->content, "hb_port")), 5004);
    fake_release(&f);
}

static void test_a_bad_time_limit_is_refused_in_turn(void)
{
    struct fake f;
    fake_init(&f);
    const char *bad[] = {"{\"sandpit\": {\"timeout\": \"5\"}}",
                         "{\"sandpit\": {\"timeout\": -1}}", "{\"sandpit\": 5}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char a[128], b[128], c[128];
        SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
        snprintf(b, sizeof b, "%s",
                 fake_request_md(&f, CONNECTION_SHELL, "execute_request", EXEC("b"),
                                 bad[k], NULL));
        SEND(&f, c, CONNECTION_SHELL, "execute_request", EXEC("c"), NULL);
        CHECK_STR(fake_labels(&f, b), ""); /* in turn, after a */
        fake_worker_reply(&f, "", a, "ok");
        CHECK_STR(fake_labels(&f, b), "busy execute_reply idle");
        const struct fake_sent *r = fake_find(&f, b, "execute_reply");
        CHECK_STR(json_string_value(json_object_get(r->content, "ename")), "ValueError");
        /* stop_on_error: what waited behind it is aborted */
        CHECK_STR(reply_status(&f, c, "execute_reply"), "aborted");
    }
    /* a good one tightens the limit */
    char d[128];
    snprintf(d, sizeof d, "%s",
             fake_request_md(&f, CONNECTION_SHELL, "execute_request", EXEC("d"),
                             "{\"sandpit\": {\"timeout\": 2.5}}", NULL));
    const json_t *w = fake_last_frame(&f, LINK_REQUEST);
    REQUIRE(w != NULL);
    CHECK(json_real_value(json_object_get(w, "timeout")) == 2.5);
    fake_release(&f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_one_request_at_a_time_per_shell),
    TESTING_CASE(test_stop_on_error_aborts_the_queued_cells),
    TESTING_CASE(test_without_stop_on_error_the_next_cell_runs),
    TESTING_CASE(test_a_failed_subshell_cell_aborts_only_its_own_queue),
    TESTING_CASE(test_subshells_run_beside_the_main_shell),
    TESTING_CASE(test_control_requests_jump_the_queue),
    TESTING_CASE(test_control_requests_keep_their_order),
    TESTING_CASE(test_requests_for_unknown_subshells_and_bad_cells),
    TESTING_CASE(test_deleting_a_subshell_answers_its_requests),
    TESTING_CASE(test_at_most_fifteen_subshells),
    TESTING_CASE(test_execution_count_and_history),
    TESTING_CASE(test_restart_in_place_aborts_the_queues_and_starts_counting_again),
    TESTING_CASE(test_a_restart_request_ends_the_kernel),
    TESTING_CASE(test_replies_on_a_shell_come_in_request_order),
    TESTING_CASE(test_connect_reply_gives_the_ports),
    TESTING_CASE(test_a_bad_time_limit_is_refused_in_turn),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
