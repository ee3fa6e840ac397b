/* Unit tests for the shells' queues, with fake sockets and a fake worker
 * (fake_kernel.h): one request at a time per shell, subshells at once beside
 * the main shell, control requests first, stop_on_error aborting the execute
 * requests that wait behind a failed one, subshells made and deleted. */
#include <stdio.h>
#include <string.h>

#include "fake_kernel.h"
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
    /* not stored: no count of its own (it shows the next one), no history */
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
              2);
    CHECK_STR(fake_labels(&f, c), "busy execute_reply idle");
    CHECK_INT(f.k.execution_count, 1);
    CHECK_INT(f.k.history.len, 1);
    fake_release(&f);
}

static void test_restart_aborts_the_queues_and_starts_counting_again(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], r[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", EXEC("a"), NULL);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", EXEC("b"), NULL);
    SEND(&f, r, CONNECTION_CONTROL, "shutdown_request", "{\"restart\": true}", NULL);
    CHECK_STR(fake_labels(&f, r), "busy shutdown_reply idle");
    CHECK_INT(f.nrestarts, 1);
    CHECK_STR(reply_status(&f, b, "execute_reply"), "aborted");
    CHECK_STR(json_string_value(
                  json_object_get(fake_find(&f, a, "execute_reply")->content, "ename")),
              "WorkerDied");
    CHECK_INT(f.k.execution_count, 0);
    CHECK_INT(f.k.history.session, 2);
    fake_release(&f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_one_request_at_a_time_per_shell),
    TESTING_CASE(test_stop_on_error_aborts_the_queued_cells),
    TESTING_CASE(test_without_stop_on_error_the_next_cell_runs),
    TESTING_CASE(test_a_failed_subshell_cell_aborts_only_its_own_queue),
    TESTING_CASE(test_subshells_run_beside_the_main_shell),
    TESTING_CASE(test_control_requests_jump_the_queue),
    TESTING_CASE(test_requests_for_unknown_subshells_and_bad_cells),
    TESTING_CASE(test_deleting_a_subshell_answers_its_requests),
    TESTING_CASE(test_at_most_fifteen_subshells),
    TESTING_CASE(test_execution_count_and_history),
    TESTING_CASE(test_restart_aborts_the_queues_and_starts_counting_again),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
