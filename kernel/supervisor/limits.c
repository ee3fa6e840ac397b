/* limits: time limits, interrupts and their escalation, the output caps, and
 * the worker's CPU time in the background.
 *
 * Every request that runs user code has a time limit: a cell's is --timeout,
 * and so is a comm message's (its handler is a widget's callback, which may run
 * as long as a cell); completion and inspection call __dir__, __repr__ and
 * properties of the user's objects, so Tab and Shift-Tab get a short limit of
 * their own, --introspection-timeout. A time limit is a time event armed when
 * the request goes to the worker. When it fires, the request is interrupted
 * with reason "timeout", so that the worker reports a TimeoutError rather than
 * a KeyboardInterrupt (for a request other than a cell, the supervisor says it
 * itself: limits_reply). Any interrupt arms a second time event,
 * LIMITS_INTERRUPT_GRACE_S later: a request that is still running then (inside
 * a long call to compiled code, or ignoring SIGINT) has its worker restarted,
 * and the error says so. The main shell's request is interrupted with SIGINT,
 * which Python turns into KeyboardInterrupt in the main thread; a subshell's,
 * by the note alone, on which the worker raises the exception in that
 * subshell's thread.
 *
 * The timers find their request by their id rather than through a pointer, so
 * a request that ended (and was freed) between arming and firing cannot be
 * reached: ending a request removes its timers anyway.
 *
 * Output is counted twice over, text and images apart: a chart is 20 to 100 kB,
 * so a cap meant for text (the agent profile's 10,000 bytes) would drop every
 * one. Output that belongs to no running request (a thread that outlived its
 * cell, or a parent forged by the code) is counted too, against the same caps
 * per minute for the whole kernel, so that late output is no way round them.
 *
 * A thread that a cell leaves running is out of reach of the cell's time limit.
 * While no request runs, what the worker uses of the CPU is that thread's (the
 * worker runs nothing else between requests), and the supervisor reads it from
 * /proc, where the code cannot change it: a bucket of --timeout seconds of CPU,
 * refilled at LIMITS_BACKGROUND_RATE of a CPU, lets light background work (a
 * progress bar, a widget's timer) go on for ever and stops a busy loop. When the
 * bucket is empty the worker is restarted, and the next cell says why. */
#include "kernel/supervisor/limits.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel/link/frames.h"
#include "kernel/log.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"

/* The shortest and longest wait between two looks at the worker's CPU time. */
#define BACKGROUND_LOOK_MIN_S 0.25
#define BACKGROUND_LOOK_MAX_S 30.0

/* --- time limits --------------------------------------------------------------- */

/* Whether a request of this type gets the short limit of introspection. */
static bool introspection(const char *type)
{
    static const char *const types[] = {"complete_request", "inspect_request",
                                        "is_complete_request", "comm_info_request"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(type, types[i]) == 0)
            return true;
    return false;
}

void limits_set_timeout(struct kernel *k, struct request *r)
{
    r->timeout_s =
        introspection(msg_type(r->msg)) ? k->opts->introspection_s : k->opts->timeout_s;
    json_t *t = json_object_get(json_object_get(r->msg->metadata, "sandpit"), "timeout");
    if (json_is_number(t) && json_number_value(t) > 0 &&
        (r->timeout_s == 0 || json_number_value(t) < r->timeout_s))
        r->timeout_s = json_number_value(t);
}

/* The shell whose running request has this time event, or NULL. */
static struct shell *shell_with_timer(struct kernel *k, long long id, bool escalation)
{
    for (size_t i = 0; i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (r && (escalation ? r->escalation_timer : r->limit_timer) == id)
            return &k->shells[i];
    }
    return NULL;
}

static double on_escalation(struct loop *l, long long id, void *data)
{
    (void)l;
    struct kernel *k = data;
    struct shell *sh = shell_with_timer(k, id, true);
    if (!sh)
        return LOOP_NOMORE;
    struct request *r = sh->current;
    r->escalation_timer = 0;
    char why[512];
    /* The worker says "cell exceeded its time limit of N s" when the cell
     * stops (sandpit/handlers.py): the same words begin this one. */
    if (r->interrupted_for_timeout && r->execute)
        snprintf(why, sizeof why,
                 "cell exceeded its time limit of %g s and did not stop when "
                 "interrupted, so its worker was restarted: variables and imports "
                 "from earlier cells are lost.",
                 r->timeout_s);
    else if (r->interrupted_for_timeout)
        snprintf(why, sizeof why,
                 "This %.64s exceeded its time limit of %g s and did not stop when "
                 "interrupted, so its worker was restarted: variables and imports "
                 "from earlier cells are lost.",
                 msg_type(r->msg), r->timeout_s);
    else
        snprintf(why, sizeof why,
                 "The cell did not stop within %.0f s of the interrupt (it was "
                 "probably inside a long call to compiled code), so its worker was "
                 "restarted: variables and imports from earlier cells are lost.",
                 LIMITS_INTERRUPT_GRACE_S);
    /* Logged once, with the request it ends (shells.c), not here as well. */
    k->io.restart_worker(k->io.ctx, why);
    return LOOP_NOMORE;
}

/* Interrupts what sh runs, and arms the escalation to a restart (an earlier
 * deadline is kept: a second interrupt does not give the cell more time). */
static void interrupt_shell(struct kernel *k, struct shell *sh, bool timeout)
{
    struct request *r = sh->current;
    if (!r || k->io.worker(k->io.ctx) != KERNEL_WORKER_READY)
        return;
    json_t *note = link_interrupt_build(&(struct link_interrupt){.shell = sh->id,
                                                                 .parent = msg_id(r->msg),
                                                                 .timeout = timeout,
                                                                 .limit = r->timeout_s});
    if (note)
        k->io.to_worker(k->io.ctx, note, NULL);
    json_decref(note);
    if (sh == &k->shells[0])
        k->io.signal_worker(k->io.ctx, SIGINT);
    if (!r->escalation_timer) {
        long long id =
            loop_add_timer(k->loop, LIMITS_INTERRUPT_GRACE_S, on_escalation, k);
        r->escalation_timer = id > 0 ? id : 0;
    }
}

static double on_time_limit(struct loop *l, long long id, void *data)
{
    (void)l;
    struct kernel *k = data;
    struct shell *sh = shell_with_timer(k, id, false);
    if (!sh)
        return LOOP_NOMORE;
    struct request *r = sh->current;
    r->limit_timer = 0;
    log_info("%s %s reached its time limit of %g s", msg_type(r->msg), msg_id(r->msg),
             r->timeout_s);
    r->interrupted_for_timeout = true;
    interrupt_shell(k, sh, true);
    return LOOP_NOMORE;
}

/* --- the worker's CPU time in the background ---------------------------------- */

static bool any_running(const struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (k->shells[i].current)
            return true;
    return false;
}

/* The bucket's size: the cell time limit, in CPU seconds; 0: no budget. */
static double background_budget(const struct kernel *k)
{
    return k->io.worker_cpu ? k->opts->timeout_s : 0;
}

/* Refills the bucket for the time since the last look and drains it by the CPU
 * time used since, if it counted. */
static void background_settle(struct kernel *k, bool counted)
{
    struct kernel_limits *b = &k->limits;
    double now = loop_now(k->loop), budget = background_budget(k);
    b->background_left += LIMITS_BACKGROUND_RATE * (now - b->background_at);
    if (b->background_left > budget)
        b->background_left = budget;
    b->background_at = now;
    double cpu = k->io.worker_cpu(k->io.ctx);
    if (cpu < 0)
        return;
    if (counted && cpu > b->background_cpu)
        b->background_left -= cpu - b->background_cpu;
    b->background_cpu = cpu;
}

static double on_background_look(struct loop *l, long long id, void *data);

static void background_arm(struct kernel *k)
{
    struct kernel_limits *b = &k->limits;
    /* The earliest the bucket can be empty: every CPU busy. */
    static long cpus;
    if (!cpus && (cpus = sysconf(_SC_NPROCESSORS_ONLN)) < 1)
        cpus = 1;
    double wait = b->background_left / (double)cpus;
    if (wait < BACKGROUND_LOOK_MIN_S)
        wait = BACKGROUND_LOOK_MIN_S;
    if (wait > BACKGROUND_LOOK_MAX_S)
        wait = BACKGROUND_LOOK_MAX_S;
    loop_del_timer(k->loop, b->background_timer);
    long long tid = loop_add_timer(k->loop, wait, on_background_look, k);
    b->background_timer = tid > 0 ? tid : 0;
}

/* No request runs: from now the worker's CPU time is background work. */
static void background_watch(struct kernel *k)
{
    struct kernel_limits *b = &k->limits;
    if (b->background_watching || background_budget(k) <= 0 ||
        k->io.worker(k->io.ctx) != KERNEL_WORKER_READY || any_running(k))
        return;
    background_settle(k, false);
    b->background_watching = true;
    background_arm(k);
}

/* A request runs, or the worker is going: what it uses is not background work. */
static void background_unwatch(struct kernel *k)
{
    struct kernel_limits *b = &k->limits;
    if (!b->background_watching)
        return;
    background_settle(k, true);
    b->background_watching = false;
    loop_del_timer(k->loop, b->background_timer);
    b->background_timer = 0;
}

static double on_background_look(struct loop *l, long long id, void *data)
{
    (void)l;
    (void)id;
    struct kernel *k = data;
    struct kernel_limits *b = &k->limits;
    b->background_timer = 0;
    if (!b->background_watching)
        return LOOP_NOMORE;
    if (k->io.worker(k->io.ctx) != KERNEL_WORKER_READY || any_running(k)) {
        b->background_watching = false;
        return LOOP_NOMORE;
    }
    background_settle(k, true);
    if (b->background_left >= 0) {
        background_arm(k);
        return LOOP_NOMORE;
    }
    double budget = background_budget(k);
    b->background_watching = false;
    snprintf(b->notice, sizeof b->notice,
             "[sandpit: the worker was restarted before this cell: threads left running "
             "by an earlier cell used the CPU while no cell ran, beyond what this kernel "
             "allows in the background (bursts of %g s of CPU, the cell time limit, and "
             "%g of a CPU on average); variables and imports from earlier cells are "
             "lost]\n",
             budget, LIMITS_BACKGROUND_RATE);
    log_warn("threads left running in the worker used more than %g s of CPU while no "
             "request ran; restarting it",
             budget);
    k->io.restart_worker(k->io.ctx,
                         "The worker was restarted: threads left running by an earlier "
                         "cell used too much CPU while no cell ran.");
    return LOOP_NOMORE;
}

void limits_worker_ready(struct kernel *k)
{
    struct kernel_limits *b = &k->limits;
    loop_del_timer(k->loop, b->background_timer);
    b->background_timer = 0;
    b->background_watching = false;
    b->background_left = background_budget(k);
    b->background_at = loop_now(k->loop);
    b->background_cpu = k->io.worker_cpu ? k->io.worker_cpu(k->io.ctx) : -1;
    background_watch(k);
}

/* --- requests ------------------------------------------------------------------- */

void limits_note(struct kernel *k, const struct request *r, const char *text)
{
    json_t *c = json_pack("{s:s, s:s}", "name", "stderr", "text", text);
    outbox_publish(k, r ? r->msg->header : NULL, "stream", &c);
}

void limits_start(struct kernel *k, struct request *r)
{
    background_unwatch(k);
    if (r->execute && !r->silent && k->limits.notice[0]) {
        limits_note(k, r, k->limits.notice);
        k->limits.notice[0] = 0;
    }
    r->sent_at = loop_now(k->loop);
    if (r->timeout_s > 0) {
        long long id = loop_add_timer(k->loop, r->timeout_s, on_time_limit, k);
        r->limit_timer = id > 0 ? id : 0;
    }
}

void limits_stop(struct kernel *k, struct request *r)
{
    loop_del_timer(k->loop, r->limit_timer);
    loop_del_timer(k->loop, r->escalation_timer);
    r->limit_timer = r->escalation_timer = 0;
    background_watch(k);
}

void limits_interrupt_all(struct kernel *k, const char *reason)
{
    if (!any_running(k))
        return;
    log_info("interrupting the worker (%s)", reason);
    for (size_t i = 0; i < k->nshells; i++)
        interrupt_shell(k, &k->shells[i], false);
}

json_t *limits_reply(struct kernel *k, struct request *r, const json_t *content)
{
    const char *status = json_string_value(json_object_get(content, "status"));
    if (r->execute || !r->interrupted_for_timeout ||
        (status && strcmp(status, "ok") == 0))
        return json_incref((json_t *)content);
    /* The worker's answer says only that something interrupted its handler. */
    char why[256];
    snprintf(why, sizeof why, "%.64s exceeded its time limit of %g s", msg_type(r->msg),
             r->timeout_s);
    log_info("%s", why);
    if (!request_has_reply(r)) {
        json_t *e = json_pack("{s:s, s:s, s:[s]}", "ename", "TimeoutError", "evalue", why,
                              "traceback", why);
        outbox_publish(k, r->msg->header, "error", &e);
    }
    return json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "TimeoutError",
                     "evalue", why, "traceback");
}

/* --- output ---------------------------------------------------------------------- */

static int add_size(const char *buffer, size_t size, void *data)
{
    (void)buffer;
    *(size_t *)data += size;
    return 0;
}

/* The bytes of one MIME value: a string's own, anything else (application/json)
 * as JSON text, without making that text. */
static size_t value_size(const json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v);
    size_t n = 0;
    json_dump_callback(v, add_size, &n, JSON_COMPACT | JSON_ENCODE_ANY);
    return n;
}

static bool is_image(const char *mime)
{
    return strncmp(mime, "image/", 6) == 0;
}

/* Takes the images (or all but them) out of a display's data; true if something
 * is left. */
static bool drop_parts(json_t *content, bool images)
{
    json_t *data = json_object_get(content, "data"), *v;
    const char *key;
    void *tmp;
    json_object_foreach_safe(data, tmp, key, v)
    {
        if (is_image(key) == images)
            json_object_del(data, key);
    }
    return json_object_size(data) > 0;
}

/* Cuts a stream that crosses the text cap at it, on a character boundary; false
 * if nothing of it fits. */
static bool cut_stream(struct request_output *c, unsigned long cap, json_t *content,
                       size_t len)
{
    size_t room = c->text_dropped ? 0 : cap - c->text;
    const char *s = json_string_value(json_object_get(content, "text"));
    while (room > 0 && ((unsigned char)s[room] & 0xC0) == 0x80)
        room--; /* do not split a UTF-8 sequence */
    c->text += room;
    c->text_dropped += len - room;
    if (room > 0)
        json_object_set_new(content, "text", json_stringn(s, room));
    return room > 0;
}

/* Counts one message against caps of text and image bytes (0: none) in c.
 * Returns false when it must be dropped. Output stops at a cap: once something
 * was dropped, what follows of that kind is too. A display keeps the part that
 * fits: its images when its text is over the cap, its text when its images are. */
static bool count_output(struct request_output *c, unsigned long text_cap,
                         unsigned long image_cap, const char *type, json_t *content)
{
    size_t text = 0, images = 0;
    if (strcmp(type, "stream") == 0) {
        text = json_string_length(json_object_get(content, "text"));
        if (text_cap && text && (c->text_dropped || c->text + text > text_cap))
            return cut_stream(c, text_cap, content, text);
        c->text += text;
        return true;
    }
    if (strcmp(type, "display_data") != 0 && strcmp(type, "execute_result") != 0 &&
        strcmp(type, "update_display_data") != 0)
        return true;
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(content, "data"), key, v)
    {
        if (is_image(key))
            images += value_size(v);
        else
            text += value_size(v);
    }
    bool left = true;
    if (text_cap && text && (c->text_dropped || c->text + text > text_cap)) {
        c->text_dropped += text;
        text = 0;
        left = drop_parts(content, false);
    }
    if (image_cap && images && (c->images_dropped || c->images + images > image_cap)) {
        c->images_dropped += images;
        images = 0;
        left = drop_parts(content, true);
    }
    c->text += text;
    c->images += images;
    return left;
}

/* Output of no running request, against the caps per window for the kernel. */
static bool late_output(struct kernel *k, const json_t *parent, const char *type,
                        json_t *content)
{
    struct kernel_limits *b = &k->limits;
    double now = loop_now(k->loop);
    if (now - b->late_since >= LIMITS_LATE_WINDOW_S) {
        memset(&b->late, 0, sizeof b->late);
        b->late_since = now;
        b->late_told = false;
    }
    struct request_output before = b->late;
    bool kept = count_output(&b->late, k->opts->max_output, options_max_images(k->opts),
                             type, content);
    bool cut = b->late.text_dropped != before.text_dropped ||
               b->late.images_dropped != before.images_dropped;
    if (cut && !b->late_told) {
        b->late_told = true;
        char line[320];
        snprintf(line, sizeof line,
                 "\n[sandpit: output that comes after its cell has ended is limited to "
                 "%lu bytes of text and %lu of images a minute in this kernel; the rest "
                 "is dropped]\n",
                 k->opts->max_output, options_max_images(k->opts));
        log_warn("late output past the caps is being dropped");
        json_t *c = json_pack("{s:s, s:s}", "name", "stderr", "text", line);
        outbox_publish(k, parent, "stream", &c);
    }
    return kept;
}

bool limits_output(struct kernel *k, struct request *r, const json_t *parent,
                   const char *type, json_t *content)
{
    unsigned long image_cap = options_max_images(k->opts);
    if (!k->opts->max_output && !image_cap)
        return true;
    if (!r)
        return late_output(k, parent, type, content);
    return count_output(&r->output, k->opts->max_output, image_cap, type, content);
}

void limits_report_dropped(struct kernel *k, struct request *r,
                           unsigned long worker_dropped)
{
    r->output.text_dropped += worker_dropped;
    char line[320];
    if (r->output.text_dropped) {
        snprintf(
            line, sizeof line,
            "\n[sandpit: output limit of %lu bytes reached; %lu more bytes of output "
            "were dropped]\n",
            k->opts->max_output, r->output.text_dropped);
        limits_note(k, r, line);
    }
    if (r->output.images_dropped) {
        snprintf(line, sizeof line,
                 "\n[sandpit: image limit of %lu bytes reached; %lu bytes of images were "
                 "dropped]\n",
                 options_max_images(k->opts), r->output.images_dropped);
        limits_note(k, r, line);
    }
}
