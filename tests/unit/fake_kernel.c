/* fake_kernel: fakes for kernel_io, and helpers that speak for the clients
 * and the worker. */
#include "fake_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/log.h"
#include "kernel/supervisor/dispatch.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/route.h"
#include "kernel/supervisor/shells.h"
#include "testing.h"

static double fake_now = 1000;

static double fake_clock(void)
{
    return fake_now;
}

static int fake_send(void *ctx, enum connection_channel ch, const struct msg *m)
{
    struct fake *f = ctx;
    REQUIRE(f->nsent < FAKE_MAX);
    struct fake_sent *s = &f->sent[f->nsent++];
    s->ch = ch;
    const char *type = msg_type(m);
    if (strcmp(type, "status") == 0)
        type = json_string_value(json_object_get(m->content, "execution_state"));
    snprintf(s->label, sizeof s->label, "%s", type ? type : "?");
    const char *parent = json_string_value(json_object_get(m->parent_header, "msg_id"));
    snprintf(s->parent, sizeof s->parent, "%s", parent ? parent : "");
    snprintf(s->id, sizeof s->id, "%s", msg_id(m));
    s->content = json_deep_copy(m->content);
    return 0;
}

static int fake_to_worker(void *ctx, const json_t *frame, const struct msg *buffers)
{
    (void)buffers;
    struct fake *f = ctx;
    REQUIRE(f->nframes < FAKE_MAX);
    /* Through the link's text and the decoder, as the worker would read it. */
    char *text = link_encode_text(frame);
    REQUIRE(text != NULL);
    struct fake_frame *fr = &f->frames[f->nframes];
    char err[256];
    int rc = link_decode(text, strlen(text), &fr->kind, &fr->obj, err, sizeof err);
    f->queued += strlen(text);
    if (!f->not_reading)
        f->written = f->queued;
    free(text);
    CHECK_STR(rc ? err : "", "");
    if (rc == 0)
        f->nframes++;
    return 0;
}

static unsigned long long fake_queued(void *ctx)
{
    return ((struct fake *)ctx)->queued;
}

static unsigned long long fake_written(void *ctx)
{
    return ((struct fake *)ctx)->written;
}

static void fake_signal(void *ctx, int sig)
{
    struct fake *f = ctx;
    REQUIRE(f->nsignals < FAKE_MAX);
    f->signals[f->nsignals++] = sig;
}

static enum kernel_worker fake_worker(void *ctx)
{
    struct fake *f = ctx;
    return f->worker;
}

static bool fake_hello(void *ctx)
{
    struct fake *f = ctx;
    if (f->worker != KERNEL_WORKER_STARTING)
        return false;
    f->worker = KERNEL_WORKER_READY;
    return true;
}

static double fake_cpu(void *ctx)
{
    struct fake *f = ctx;
    return f->cpu;
}

static void fake_restart(void *ctx, const char *why)
{
    struct fake *f = ctx;
    REQUIRE(f->nrestarts < 8);
    snprintf(f->restarts[f->nrestarts++], sizeof f->restarts[0], "%s", why);
    shells_worker_lost(&f->k, why);
    f->worker = KERNEL_WORKER_STARTING;
}

void fake_init(struct fake *f)
{
    memset(f, 0, sizeof *f);
    log_init("kernel", LOG_ERROR, 2); /* the warnings the tests provoke are expected */
    options_init(&f->opts);
    REQUIRE((f->opts.history = strdup("off")) != NULL); /* in memory */
    REQUIRE(kernel_init(&f->k, &f->opts, "/workspace", "tester") == 0);
    REQUIRE((f->loop = loop_new(fake_clock)) != NULL);
    f->k.loop = f->loop;
    f->k.io = (struct kernel_io){
        .ctx = f,
        .send = fake_send,
        .to_worker = fake_to_worker,
        .signal_worker = fake_signal,
        .worker = fake_worker,
        .worker_hello = fake_hello,
        .restart_worker = fake_restart,
        .worker_cpu = fake_cpu,
        .worker_queued = fake_queued,
        .worker_written = fake_written,
    };
    f->worker = KERNEL_WORKER_READY;
}

void fake_release(struct fake *f)
{
    fake_check_status(f);
    kernel_release(&f->k);
    loop_free(f->loop);
    for (size_t i = 0; i < f->nsent; i++)
        json_decref(f->sent[i].content);
    for (size_t i = 0; i < f->nframes; i++)
        json_decref(f->frames[i].obj);
    options_release(&f->opts);
}

const char *fake_request_md(struct fake *f, enum connection_channel ch,
                            const char *msg_type, const char *content,
                            const char *metadata, const char *sub)
{
    static char id[128];
    static struct msg_session client;
    if (!client.session[0])
        REQUIRE(msg_session_init(&client, "client") == 0);
    json_t *c = content ? json_loads(content, 0, NULL) : json_object();
    REQUIRE(c != NULL);
    struct msg *m = msg_make(&client, msg_type, NULL, &c, false);
    REQUIRE(m != NULL);
    REQUIRE(msg_add_ident(m, "client-1", 8) == 0);
    if (sub)
        json_object_set_new(m->header, "subshell_id", json_string(sub));
    if (metadata) {
        json_decref(m->metadata);
        REQUIRE((m->metadata = json_loads(metadata, 0, NULL)) != NULL);
    }
    snprintf(id, sizeof id, "%s", msg_id(m));
    if (ch == CONNECTION_STDIN)
        route_stdin(&f->k, &m);
    else
        dispatch_msg(&f->k, &m, ch);
    CHECK(m == NULL);
    msg_free(m);
    shells_pump(&f->k); /* what the loop's hook does before it waits */
    return id;
}

const char *fake_request(struct fake *f, enum connection_channel ch, const char *msg_type,
                         const char *content, const char *sub)
{
    return fake_request_md(f, ch, msg_type, content, NULL, sub);
}

void fake_subshell(struct fake *f, char *sub, size_t len)
{
    const char *id =
        fake_request(f, CONNECTION_CONTROL, "create_subshell_request", NULL, NULL);
    const struct fake_sent *r = fake_find(f, id, "create_subshell_reply");
    REQUIRE(r != NULL);
    const char *s = json_string_value(json_object_get(r->content, "subshell_id"));
    REQUIRE(s != NULL);
    snprintf(sub, len, "%s", s);
}

void fake_input_reply(struct fake *f, const char *parent, const char *value)
{
    static struct msg_session client;
    if (!client.session[0])
        REQUIRE(msg_session_init(&client, "client") == 0);
    json_t *c = json_pack("{s:s}", "value", value);
    struct msg *m = msg_make(&client, "input_reply", NULL, &c, false);
    REQUIRE(m != NULL);
    json_object_set_new(m->parent_header, "msg_id", json_string(parent));
    route_stdin(&f->k, &m);
    CHECK(m == NULL);
    msg_free(m);
}

void fake_worker_text(struct fake *f, const char *json)
{
    struct link_frame raw = {(char *)json, strlen(json), NULL, 0};
    route_frame(&f->k, &raw);
    shells_pump(&f->k);
}

void fake_worker_frame(struct fake *f, json_t *frame)
{
    REQUIRE(frame != NULL);
    char *text = link_encode_text(frame);
    json_decref(frame);
    REQUIRE(text != NULL);
    fake_worker_text(f, text);
    free(text);
}

void fake_worker_reply(struct fake *f, const char *shell, const char *parent,
                       const char *status)
{
    json_t *content = json_pack("{s:s}", "status", status);
    if (strcmp(status, "error") == 0) {
        json_t *e = json_pack("{s:s, s:s, s:[]}", "ename", "ValueError", "evalue", "bad",
                              "traceback");
        json_object_update(content, e);
        json_decref(e);
    }
    fake_worker_frame(f, link_reply_build(&(struct link_reply){
                             .shell = shell, .parent = parent, .content = content}));
    json_decref(content);
}

void fake_advance(struct fake *f, double seconds)
{
    fake_now += seconds;
    REQUIRE(loop_turn(f->loop, 0) == 0);
    shells_pump(&f->k);
}

void fake_history_wait(struct fake *f)
{
    for (int i = 0; i < 500 && history_asked(&f->k.history) > 0; i++)
        REQUIRE(loop_turn(f->loop, 10) == 0);
    CHECK_INT(history_asked(&f->k.history), 0);
    shells_pump(&f->k);
}

size_t fake_check_status(const struct fake *f)
{
    size_t begun = 0, ended = 0;
    for (size_t i = 0; i < f->nsent; i++) {
        bool busy = strcmp(f->sent[i].label, "busy") == 0;
        if (!busy && strcmp(f->sent[i].label, "idle") != 0)
            continue;
        begun += busy;
        ended += !busy;
        /* this parent's status before this one: nothing but a busy before an idle */
        size_t before = 0;
        for (size_t j = 0; j < i; j++)
            if (strcmp(f->sent[j].parent, f->sent[i].parent) == 0 &&
                (strcmp(f->sent[j].label, "busy") == 0 ||
                 strcmp(f->sent[j].label, "idle") == 0)) {
                before++;
                CHECK(!busy && strcmp(f->sent[j].label, "busy") == 0);
            }
        CHECK(before == (busy ? 0 : 1));
        if (before != (busy ? 0u : 1u))
            fprintf(stderr, "  %s for %s after %zu status messages of its own\n",
                    f->sent[i].label, f->sent[i].parent, before);
    }
    CHECK_INT(f->k.requests_begun, begun);
    CHECK_INT(f->k.requests_ended, ended);
    return ended;
}

const char *fake_labels(const struct fake *f, const char *parent)
{
    static char out[2048];
    out[0] = 0;
    for (size_t i = 0; i < f->nsent; i++) {
        if (strcmp(f->sent[i].parent, parent) != 0)
            continue;
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s%s", n ? " " : "", f->sent[i].label);
    }
    return out;
}

const struct fake_sent *fake_find(const struct fake *f, const char *parent,
                                  const char *label)
{
    for (size_t i = f->nsent; i-- > 0;)
        if (strcmp(f->sent[i].parent, parent) == 0 &&
            strcmp(f->sent[i].label, label) == 0)
            return &f->sent[i];
    return NULL;
}

const json_t *fake_last_frame(const struct fake *f, enum link_kind kind)
{
    for (size_t i = f->nframes; i-- > 0;)
        if (f->frames[i].kind == kind)
            return f->frames[i].obj;
    return NULL;
}

size_t fake_count_frames(const struct fake *f, enum link_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nframes; i++)
        n += f->frames[i].kind == kind;
    return n;
}
