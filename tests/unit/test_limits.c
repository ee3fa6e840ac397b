/* Unit tests for limits: time limits and the escalation of interrupts, on a
 * clock the test moves (fake_kernel.h), and the output cap. A cell past its
 * time limit is interrupted (a note naming the reason, and SIGINT for the main
 * shell); one that does not stop within the grace period has its worker
 * restarted and ends with TimeoutError; one that ends in time leaves no timer
 * behind. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fake_kernel.h"
#include "kernel/util/log.h"
#include "kernel/supervisor/limits.h"
#include "testing.h"

#define SEND(f, buf, ...) snprintf(buf, sizeof buf, "%s", fake_request(f, __VA_ARGS__))

static const char *ename_of(const struct fake *f, const char *id, const char *label)
{
    const struct fake_sent *s = fake_find(f, id, label);
    return s ? json_string_value(json_object_get(s->content, "ename")) : NULL;
}

static struct link_interrupt last_interrupt(const struct fake *f)
{
    struct link_interrupt in;
    memset(&in, 0, sizeof in);
    const json_t *o = fake_last_frame(f, LINK_INTERRUPT);
    char err[256];
    REQUIRE(o && link_interrupt_parse(o, &in, err, sizeof err) == 0);
    return in;
}

static void test_time_limit_then_escalation_in_the_main_shell(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 2;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"while 1: pass\"}",
         NULL);
    fake_advance(&f, 1.9);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 0);
    fake_advance(&f, 0.2);
    REQUIRE(fake_count_frames(&f, LINK_INTERRUPT) == 1);
    struct link_interrupt in = last_interrupt(&f);
    CHECK_STR(in.shell, "");
    CHECK_STR(in.parent, a);
    CHECK(in.timeout && in.limit == 2);
    CHECK(f.nsignals == 1 && f.signals[0] == SIGINT);
    /* it does not stop: the grace period, then a restart */
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S - 0.1);
    CHECK_INT(f.nrestarts, 0);
    fake_advance(&f, 0.2);
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "exceeded its time limit of 2 s") != NULL);
    CHECK_STR(fake_labels(&f, a), "busy execute_input error execute_reply idle");
    CHECK_STR(ename_of(&f, a, "error"), "TimeoutError");
    CHECK_STR(ename_of(&f, a, "execute_reply"), "TimeoutError");
    /* nothing more is due */
    fake_advance(&f, 100);
    CHECK_INT(f.nrestarts, 1);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 1);
    fake_release(&f);
}

/* The time limit's words are the worker's ("cell exceeded its time limit of
 * N s"), and the restart it causes is one warning in the log, not two. */
static void test_a_restart_for_the_time_limit_is_logged_once(void)
{
    struct fake f;
    fake_init(&f);
    FILE *log = tmpfile();
    REQUIRE(log != NULL);
    log_init("kernel", LOG_WARN, fileno(log));
    f.opts.timeout_s = 2;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"while 1: pass\"}",
         NULL);
    fake_advance(&f, 2.1);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S + 0.1);
    REQUIRE(f.nrestarts == 1);
    const struct fake_sent *s = fake_find(&f, a, "error");
    REQUIRE(s != NULL);
    const char *evalue = json_string_value(json_object_get(s->content, "evalue"));
    CHECK(evalue && strncmp(evalue, "cell exceeded its time limit of 2 s", 35) == 0);
    char text[4096] = "";
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    text[n] = 0;
    int times = 0;
    for (const char *p = text; (p = strstr(p, "time limit of 2 s")); p++)
        times++;
    CHECK_INT(times, 1);
    log_init("kernel", LOG_ERROR, 2);
    fclose(log);
    fake_release(&f);
}

static void test_time_limit_in_a_subshell(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 1;
    char sub[64], b[128];
    fake_subshell(&f, sub, sizeof sub);
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"sleep\"}", sub);
    fake_advance(&f, 1.1);
    struct link_interrupt in = last_interrupt(&f);
    CHECK_STR(in.shell, sub);
    CHECK(in.timeout);
    CHECK_INT(f.nsignals, 0); /* SIGINT is for the main thread only */
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S + 0.1);
    CHECK_INT(f.nrestarts, 1);
    CHECK_STR(ename_of(&f, b, "error"), "TimeoutError");
    CHECK_STR(ename_of(&f, b, "execute_reply"), "TimeoutError");
    fake_release(&f);
}

static void test_a_cell_that_stops_in_time_leaves_no_timer(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 2;
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"1\"}", NULL);
    fake_advance(&f, 1);
    fake_worker_reply(&f, "", a, "ok");
    fake_advance(&f, 10);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 0);
    /* one that stops after the interrupt is not restarted either */
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"2\"}", NULL);
    fake_advance(&f, 2.5);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 1);
    fake_worker_reply(&f, "", b, "error");
    fake_advance(&f, 10);
    CHECK_INT(f.nrestarts, 0);
    fake_release(&f);
}

static void test_a_request_may_tighten_its_limit_not_loosen_it(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 10;
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"a\"}", NULL);
    fake_request_md(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"b\"}",
                    "{\"sandpit\": {\"timeout\": 1}}", NULL);
    fake_worker_reply(&f, "", a, "ok");
    fake_advance(&f, 1.1);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 1);
    CHECK(last_interrupt(&f).limit == 1);
    fake_release(&f);

    fake_init(&f);
    f.opts.timeout_s = 2;
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"b\"}", NULL);
    fake_worker_reply(&f, "", b, "ok");
    fake_request_md(&f, CONNECTION_SHELL, "execute_request", "{\"code\": \"c\"}",
                    "{\"sandpit\": {\"timeout\": 60}}", NULL);
    fake_advance(&f, 2.1);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 1);
    CHECK(last_interrupt(&f).limit == 2);
    fake_release(&f);
}

/* The text of the last stream sent for parent, or NULL. */
static const char *last_stream(const struct fake *f, const char *parent)
{
    const char *text = NULL;
    for (size_t i = 0; i < f->nsent; i++)
        if (strcmp(f->sent[i].parent, parent) == 0 &&
            strcmp(f->sent[i].label, "stream") == 0)
            text = json_string_value(json_object_get(f->sent[i].content, "text"));
    return text;
}

/* With no time limit, an interrupt the cell does not obey costs nothing by
 * itself: after the grace period the cell is told so on stderr, and only the
 * next interrupt restarts the worker. */
static void test_an_interrupt_not_obeyed_is_told_then_a_second_restarts(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], i1[128], i2[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"compiled()\"}", NULL);
    fake_advance(&f, 30); /* no time limit: nothing happens */
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 0);
    SEND(&f, i1, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    CHECK_STR(fake_labels(&f, i1), "busy interrupt_reply idle");
    struct link_interrupt in = last_interrupt(&f);
    CHECK(!in.timeout);
    CHECK_STR(in.parent, a);
    CHECK(f.nsignals == 1 && f.signals[0] == SIGINT);
    /* an interrupt within the grace period signals again, and neither restarts
     * nor gives the cell more time before it is told */
    fake_advance(&f, 3);
    SEND(&f, i2, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    CHECK_INT(f.nsignals, 2);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S - 3 - 0.1);
    CHECK_STR(fake_labels(&f, a), "busy execute_input");
    fake_advance(&f, 0.2);
    CHECK_STR(fake_labels(&f, a), "busy execute_input stream");
    const char *told = last_stream(&f, a);
    CHECK(told && strstr(told, "has not stopped 5 s after the interrupt") != NULL);
    CHECK(told && strstr(told, "Interrupt again to restart the worker") != NULL);
    CHECK(told && strchr(told + 1, '\n') == told + strlen(told) - 1); /* one line */
    CHECK_STR(
        json_string_value(json_object_get(fake_find(&f, a, "stream")->content, "name")),
        "stderr");
    /* the cell may run as long as it likes: the state is not lost */
    fake_advance(&f, 600);
    CHECK_INT(f.nrestarts, 0);
    CHECK_STR(fake_labels(&f, a), "busy execute_input stream");
    /* the next interrupt restarts the worker, and says why */
    SEND(&f, i2, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "Interrupted again") != NULL);
    CHECK(strstr(f.restarts[0], "lost") != NULL);
    CHECK_STR(ename_of(&f, a, "execute_reply"), "WorkerDied");
    CHECK_STR(fake_labels(&f, i2), "busy interrupt_reply idle");
    /* with nothing running, an interrupt does nothing */
    size_t frames = f.nframes;
    SEND(&f, i1, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    CHECK_INT(f.nframes, frames);
    CHECK_INT(f.nrestarts, 1);
    fake_release(&f);
}

/* A cell told that it has not stopped ends on its own, with its error; the next
 * cell starts afresh: its first interrupt only interrupts. A silent cell is
 * told nothing on iopub, and a second interrupt restarts its worker too. */
static void test_a_told_cell_that_stops_keeps_the_state(void)
{
    struct fake f;
    fake_init(&f);
    char a[128], b[128], c[128], i[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"compiled()\"}", NULL);
    SEND(&f, i, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S + 0.1);
    CHECK_STR(fake_labels(&f, a), "busy execute_input stream");
    fake_worker_reply(&f, "", a, "error");
    CHECK_STR(fake_labels(&f, a), "busy execute_input stream execute_reply idle");
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"again()\"}", NULL);
    SEND(&f, i, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    CHECK_INT(f.nrestarts, 0);
    CHECK_INT(f.nsignals, 2);
    fake_worker_reply(&f, "", b, "error");
    SEND(&f, c, CONNECTION_SHELL, "execute_request",
         "{\"code\": \"compiled()\", \"silent\": true}", NULL);
    SEND(&f, i, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S + 0.1);
    CHECK_STR(fake_labels(&f, c), "busy");
    CHECK_INT(f.nrestarts, 0);
    SEND(&f, i, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    CHECK_INT(f.nrestarts, 1);
    fake_advance(&f, 100);
    CHECK_INT(f.nrestarts, 1);
    fake_release(&f);
}

/* A cell with a time limit: the user's interrupt is told as without one, and
 * the time limit still ends the cell, restarting the worker if it must. */
static void test_the_user_interrupt_leaves_the_time_limit_running(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 20;
    char a[128], i[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"compiled()\"}", NULL);
    fake_advance(&f, 1);
    SEND(&f, i, CONNECTION_CONTROL, "interrupt_request", NULL, NULL);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S + 0.1);
    CHECK_STR(fake_labels(&f, a), "busy execute_input stream");
    CHECK_INT(f.nrestarts, 0);
    fake_advance(&f, 20 - 1 - LIMITS_INTERRUPT_GRACE_S); /* the limit: interrupted */
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 2);
    CHECK(last_interrupt(&f).timeout);
    CHECK_INT(f.nrestarts, 0);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S);
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "exceeded its time limit of 20 s") != NULL);
    CHECK_STR(ename_of(&f, a, "execute_reply"), "TimeoutError");
    fake_release(&f);
}

static void stream(struct fake *f, const char *parent, const char *text)
{
    json_t *c = json_pack("{s:s, s:s}", "name", "stdout", "text", text);
    fake_worker_frame(f, link_iopub_build(&(struct link_iopub){
                             .msg_type = "stream", .parent = parent, .content = c}));
    json_decref(c);
}

static void test_the_output_cap(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.max_output = 10;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"p\"}", NULL);
    stream(&f, a, "123456");
    /* cut at the cap, on a character boundary: "é" is two bytes, and the cap
     * falls between them */
    stream(&f, a, "abc\xc3\xa9\xc3\xa9");
    stream(&f, a, "dropped");
    json_t *c = json_pack("{s:{s:s}}", "data", "text/plain", "a display");
    fake_worker_frame(&f, link_iopub_build(&(struct link_iopub){
                              .msg_type = "display_data", .parent = a, .content = c}));
    json_decref(c);
    /* the worker's pump dropped 100 bytes of its own */
    json_t *r = json_pack("{s:s, s:i}", "status", "ok", "sandpit_dropped", 100);
    fake_worker_frame(&f, link_reply_build(&(struct link_reply){
                              .shell = "", .parent = a, .content = r}));
    json_decref(r);
    CHECK_STR(fake_labels(&f, a),
              "busy execute_input stream stream stream execute_reply idle");
    const char *texts[3] = {0};
    size_t n = 0;
    for (size_t i = 0; i < f.nsent; i++)
        if (strcmp(f.sent[i].parent, a) == 0 && strcmp(f.sent[i].label, "stream") == 0)
            texts[n++] = json_string_value(json_object_get(f.sent[i].content, "text"));
    REQUIRE(n == 3);
    CHECK_STR(texts[0], "123456");
    CHECK_STR(texts[1], "abc");
    /* 4 + 7 + 35 (the display, {"data":{"text/plain":"a display"}}) + 100 from
     * the pump */
    CHECK_STR(texts[2], "\n[sandpit: output limit of 10 bytes reached; 146 more bytes of "
                        "output were dropped]\n");
    const struct fake_sent *reply = fake_find(&f, a, "execute_reply");
    CHECK(json_object_get(reply->content, "sandpit_dropped") == NULL);
    /* the next cell starts with a count of its own */
    char b[128];
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"q\"}", NULL);
    stream(&f, b, "0123456789");
    fake_worker_reply(&f, "", b, "ok");
    CHECK_STR(fake_labels(&f, b), "busy execute_input stream execute_reply idle");
    fake_release(&f);
}

/* Completion and inspection run the user's code (__dir__, __repr__): they have a
 * short limit of their own, escalate as a cell does, and their reply names the
 * limit. */
static void test_introspection_has_a_limit_of_its_own(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.introspection_s = 1; /* no --timeout at all */
    char a[128], b[128];
    SEND(&f, a, CONNECTION_SHELL, "complete_request", "{\"code\": \"x.\"}", NULL);
    fake_advance(&f, 0.9);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 0);
    fake_advance(&f, 0.2);
    REQUIRE(fake_count_frames(&f, LINK_INTERRUPT) == 1);
    struct link_interrupt in = last_interrupt(&f);
    CHECK(in.timeout && in.limit == 1);
    CHECK(f.nsignals == 1 && f.signals[0] == SIGINT);
    /* the handler was interrupted: the worker's own words are replaced */
    json_t *r = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                          "SandpitError", "evalue", "KeyboardInterrupt", "traceback");
    fake_worker_frame(&f, link_reply_build(&(struct link_reply){
                              .shell = "", .parent = a, .content = r}));
    json_decref(r);
    CHECK_STR(fake_labels(&f, a), "busy complete_reply idle");
    const struct fake_sent *reply = fake_find(&f, a, "complete_reply");
    CHECK_STR(json_string_value(json_object_get(reply->content, "ename")),
              "TimeoutError");
    CHECK_STR(json_string_value(json_object_get(reply->content, "evalue")),
              "complete_request exceeded its time limit of 1 s");
    /* one that does not stop has its worker restarted, and says so */
    SEND(&f, b, CONNECTION_SHELL, "inspect_request", "{\"code\": \"x\"}", NULL);
    fake_advance(&f, 1.1);
    fake_advance(&f, LIMITS_INTERRUPT_GRACE_S);
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "This inspect_request exceeded its time limit of 1 s") !=
          NULL);
    CHECK_STR(ename_of(&f, b, "inspect_reply"), "TimeoutError");
    fake_release(&f);
}

/* A comm message runs a widget's handler: it has the cell's limit, and, having no
 * reply, says on iopub that it was stopped. */
static void test_comm_messages_have_the_cell_limit(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 3;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "comm_msg", "{\"comm_id\": \"c\", \"data\": {}}", NULL);
    fake_advance(&f, 2.9);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 0);
    fake_advance(&f, 0.2);
    CHECK_INT(fake_count_frames(&f, LINK_INTERRUPT), 1);
    fake_worker_reply(&f, "", a, "error");
    CHECK_STR(fake_labels(&f, a), "busy error idle");
    CHECK_STR(ename_of(&f, a, "error"), "TimeoutError");
    fake_release(&f);
}

static void display(struct fake *f, const char *parent, const char *data)
{
    json_t *c = json_pack("{s:o, s:{}}", "data", json_loads(data, 0, NULL), "metadata");
    fake_worker_frame(f,
                      link_iopub_build(&(struct link_iopub){
                          .msg_type = "display_data", .parent = parent, .content = c}));
    json_decref(c);
}

static const json_t *data_of(const struct fake *f, size_t i)
{
    return json_object_get(f->sent[i].content, "data");
}

/* The base64 of a PNG's signature: what makes a value an image. */
#define PNG "iVBORw0KGgo"

/* Images count against a budget of their own, so a cap meant for text keeps the
 * charts; past either, the part that fits is kept. Text is every byte of the
 * message but its images: its keys, its metadata. */
static void test_images_have_a_budget_of_their_own(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.max_output = 100;
    f.opts.max_images = 200;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"p\"}", NULL);
    size_t first = f.nsent;
    /* 60 bytes of PNG, 63 of text (the whole message but its image): both fit */
    display(&f, a,
            "{\"image/png\": \"" PNG "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            "\", \"text/plain\": \"<Figure>\"}");
    /* text over the cap: the image stays, and what is left of the message (51
     * bytes) counts as images; 24 bytes of text dropped */
    display(&f, a, "{\"image/png\": \"" PNG "A\", \"text/plain\": \"<Figure>\"}");
    /* an image over its budget: the text would stay, but the text is over too
     * (57 bytes) */
    display(&f, a,
            "{\"image/png\": \"" PNG "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            "AAAAAAAA\", \"text/html\": \"<b>\"}");
    /* application/json counts as text, by its JSON size (57 bytes) */
    display(&f, a, "{\"application/json\": {\"k\": [1, 2, 3]}}");
    /* a made-up image type, and an image/png that is no PNG, are text */
    display(&f, a, "{\"image/x-made-up\": \"" PNG "\"}");
    display(&f, a, "{\"image/png\": \"text, not a PNG\"}");
    fake_worker_reply(&f, "", a, "ok");
    CHECK_STR(fake_labels(&f, a),
              "busy execute_input display_data display_data stream stream execute_reply "
              "idle");
    CHECK_INT(json_object_size(data_of(&f, first)), 2);
    CHECK(json_object_get(data_of(&f, first + 1), "image/png") != NULL);
    CHECK(json_object_get(data_of(&f, first + 1), "text/plain") == NULL);
    const char *lines[2];
    size_t n = 0;
    for (size_t i = first; i < f.nsent; i++)
        if (strcmp(f.sent[i].label, "stream") == 0)
            lines[n++] = json_string_value(json_object_get(f.sent[i].content, "text"));
    REQUIRE(n == 2);
    /* 24 + 57 + 57 + 56 + 54 bytes of text; 100 bytes of images */
    CHECK_STR(lines[0],
              "\n[sandpit: output limit of 100 bytes reached; 248 more bytes of "
              "output were dropped]\n");
    CHECK_STR(lines[1], "\n[sandpit: image limit of 200 bytes reached; 100 bytes of "
                        "images were dropped]\n");
    fake_release(&f);

    /* images over their budget: the text of the display stays */
    fake_init(&f);
    f.opts.max_output = 100;
    f.opts.max_images = 10;
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"p\"}", NULL);
    first = f.nsent;
    display(&f, a, "{\"image/png\": \"" PNG "A\", \"text/plain\": \"<Figure>\"}");
    CHECK_STR(fake_labels(&f, a), "busy execute_input display_data");
    CHECK_INT(json_object_size(data_of(&f, first)), 1);
    CHECK(json_object_get(data_of(&f, first), "text/plain") != NULL);
    fake_release(&f);

    /* by default, images get 16 MiB where text is capped, and nothing is capped
     * where it is not */
    struct options o;
    options_init(&o);
    CHECK_INT(options_max_images(&o), 0);
    o.max_output = 10000;
    CHECK_INT(options_max_images(&o), 16 << 20);
    o.max_images = 0;
    CHECK_INT(options_max_images(&o), 0);
    options_release(&o);
}

/* Output of no running request (a thread whose cell has ended, a parent the
 * kernel never ran) is capped per minute for the whole kernel: late output is
 * no way round the cap. */
static void test_late_output_is_capped_for_the_kernel(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.max_output = 10;
    char a[128];
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"p\"}", NULL);
    fake_worker_reply(&f, "", a, "ok");
    size_t first = f.nsent;
    for (int i = 0; i < 1000; i++) {
        stream(&f, a, "0123456");
        stream(&f, "never-ran", "0123456");
    }
    size_t bytes = 0, notices = 0;
    for (size_t i = first; i < f.nsent; i++) {
        const char *t = json_string_value(json_object_get(f.sent[i].content, "text"));
        if (strstr(t, "[sandpit: output that comes after its cell has ended"))
            notices++;
        else
            bytes += strlen(t);
    }
    CHECK_INT(bytes, 10);
    CHECK_INT(notices, 1);
    /* a minute later, a little more may pass */
    fake_advance(&f, LIMITS_LATE_WINDOW_S);
    stream(&f, a, "0123456");
    CHECK_STR(json_string_value(json_object_get(f.sent[f.nsent - 1].content, "text")),
              "0123456");
    fake_release(&f);
}

/* While no request runs, the worker's CPU time is that of threads a cell left
 * running: light work goes on, a busy loop gets the worker restarted, and the
 * next cell says why. */
static void test_threads_in_the_background_have_a_cpu_budget(void)
{
    struct fake f;
    fake_init(&f);
    f.opts.timeout_s = 2;
    char a[128], b[128];
    fake_worker_text(&f, "{\"type\": \"hello\", \"python_version\": \"3.11\", "
                         "\"sandbox\": []}");
    /* what a request uses is the request's */
    SEND(&f, a, CONNECTION_SHELL, "execute_request", "{\"code\": \"p\"}", NULL);
    f.cpu += 100;
    fake_advance(&f, 100);
    fake_worker_reply(&f, "", a, "ok");
    /* light work, within a tenth of a CPU: for ever */
    for (int i = 0; i < 100; i++) {
        f.cpu += 0.05;
        fake_advance(&f, 1);
    }
    CHECK_INT(f.nrestarts, 0);
    /* a busy loop: 2 s of CPU more than the refill, then a restart */
    for (int i = 0; i < 20 && !f.nrestarts; i++) {
        f.cpu += 0.5;
        fake_advance(&f, 0.5);
    }
    REQUIRE(f.nrestarts == 1);
    CHECK(strstr(f.restarts[0], "used too much CPU while no cell ran") != NULL);
    fake_worker_text(&f, "{\"type\": \"hello\", \"python_version\": \"3.11\", "
                         "\"sandbox\": []}");
    SEND(&f, b, CONNECTION_SHELL, "execute_request", "{\"code\": \"q\"}", NULL);
    CHECK_STR(fake_labels(&f, b), "busy execute_input stream");
    const struct fake_sent *note = fake_find(&f, b, "stream");
    CHECK(strstr(json_string_value(json_object_get(note->content, "text")),
                 "threads left running by an earlier cell") != NULL);
    fake_worker_reply(&f, "", b, "ok");
    /* without a time limit, no budget */
    fake_release(&f);
    fake_init(&f);
    fake_worker_text(&f, "{\"type\": \"hello\", \"python_version\": \"3.11\", "
                         "\"sandbox\": []}");
    for (int i = 0; i < 100; i++) {
        f.cpu += 1;
        fake_advance(&f, 1);
    }
    CHECK_INT(f.nrestarts, 0);
    fake_release(&f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_time_limit_then_escalation_in_the_main_shell),
    TESTING_CASE(test_time_limit_in_a_subshell),
    TESTING_CASE(test_a_cell_that_stops_in_time_leaves_no_timer),
    TESTING_CASE(test_a_request_may_tighten_its_limit_not_loosen_it),
    TESTING_CASE(test_an_interrupt_not_obeyed_is_told_then_a_second_restarts),
    TESTING_CASE(test_a_told_cell_that_stops_keeps_the_state),
    TESTING_CASE(test_the_user_interrupt_leaves_the_time_limit_running),
    TESTING_CASE(test_a_restart_for_the_time_limit_is_logged_once),
    TESTING_CASE(test_the_output_cap),
    TESTING_CASE(test_introspection_has_a_limit_of_its_own),
    TESTING_CASE(test_comm_messages_have_the_cell_limit),
    TESTING_CASE(test_images_have_a_budget_of_their_own),
    TESTING_CASE(test_late_output_is_capped_for_the_kernel),
    TESTING_CASE(test_threads_in_the_background_have_a_cpu_budget),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
