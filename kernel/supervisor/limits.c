/* limits: time limits, interrupts and their escalation, and the output caps.
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
 * LIMITS_INTERRUPT_GRACE_S later, for a request still running then (inside a
 * long call to compiled code, or ignoring SIGINT). If its time limit
 * interrupted it, its worker is restarted, and the error says so. The user's
 * interrupt never costs the state by itself (in ipykernel the KeyboardInterrupt
 * lands when the call to compiled code returns): the request is told on stderr
 * that it has not stopped yet, and why, and the next interrupt is the user's
 * choice to restart the worker (or the client's restart is; a time limit, if
 * the request has one, still runs). The main shell's request is interrupted
 * with SIGINT, which Python turns into KeyboardInterrupt in the main thread; a
 * subshell's, by the note alone, on which the worker raises the exception in
 * that subshell's thread.
 *
 * The timers find their request by their id rather than through a pointer, so
 * a request that ended (and was freed) between arming and firing cannot be
 * reached: ending a request removes its timers anyway.
 *
 * Output is counted twice over, text and images apart: a chart is 20 to 100 kB,
 * so a cap meant for text (the agent profile's 10,000 bytes) would drop every
 * one. Every byte of every message counts, the parts a notebook does not show
 * (metadata, transient, a comm's state, buffers, a reply's payload) as much as
 * the rest, and an image is what holds one (sizes.c), not what its key says.
 * Output that belongs to no running request (a thread that outlived its cell, a
 * comm between cells, or a parent forged by the code) is counted too, against
 * the same caps per minute for the whole kernel, so that late output is no way
 * round them; and every message counts against a rate for the whole kernel, so
 * that many small ones (clear_output) are no way round them either.
 *
 * The worker's CPU time in the background is limits_background.c's. */
#include "kernel/supervisor/limits.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/link/frames.h"
#include "kernel/util/log.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"
#include "kernel/supervisor/sizes.h"

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

/* A user's interrupt has gone unheeded for its grace period: the request is
 * told on stderr (a silent cell excepted), and the next interrupt restarts the
 * worker. */
static void tell_still_running(struct kernel *k, struct request *r)
{
    r->interrupt_told = true;
    log_info("%s %s has not stopped %g s after the interrupt; the next interrupt "
             "restarts the worker",
             msg_type(r->msg), msg_id(r->msg), LIMITS_INTERRUPT_GRACE_S);
    if (r->execute && r->silent)
        return;
    char line[512];
    snprintf(line, sizeof line,
             "\n[sandpit: the %.64s has not stopped %.0f s after the interrupt: it is "
             "probably inside a long call to compiled code, and will stop when that "
             "call returns, its variables kept. Interrupt again to restart the worker "
             "now instead: variables and imports from earlier cells are then lost.]\n",
             r->execute ? "cell" : msg_type(r->msg), LIMITS_INTERRUPT_GRACE_S);
    limits_note(k, r, line);
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
    if (!r->interrupted_for_timeout) {
        tell_still_running(k, r);
        return LOOP_NOMORE;
    }
    char why[512];
    /* The worker says "cell exceeded its time limit of N s" when the cell
     * stops (sandpit/handlers.py): the same words begin this one. */
    if (r->execute)
        snprintf(why, sizeof why,
                 "cell exceeded its time limit of %g s and did not stop when "
                 "interrupted, so its worker was restarted: variables and imports "
                 "from earlier cells are lost.",
                 r->timeout_s);
    else
        snprintf(why, sizeof why,
                 "This %.64s exceeded its time limit of %g s and did not stop when "
                 "interrupted, so its worker was restarted: variables and imports "
                 "from earlier cells are lost.",
                 msg_type(r->msg), r->timeout_s);
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
    k->counts.timeouts++;
    interrupt_shell(k, sh, true);
    return LOOP_NOMORE;
}

/* --- requests ------------------------------------------------------------------- */

void limits_note(struct kernel *k, const struct request *r, const char *text)
{
    json_t *c = json_pack("{s:s, s:s}", "name", "stderr", "text", text);
    outbox_publish(k, r ? r->msg->header : NULL, "stream", &c);
}

void limits_start(struct kernel *k, struct request *r)
{
    limits_background_unwatch(k);
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
    limits_background_watch(k);
}

void limits_interrupt_all(struct kernel *k, const char *reason)
{
    if (!kernel_any_running(k))
        return;
    for (size_t i = 0; i < k->nshells; i++) {
        struct request *r = k->shells[i].current;
        if (!r || !r->interrupt_told || k->io.worker(k->io.ctx) != KERNEL_WORKER_READY)
            continue;
        /* The user was told what a second interrupt does, and chose it. */
        log_info("interrupted again (%s) while %s %s had not stopped: restarting the "
                 "worker",
                 reason, msg_type(r->msg), msg_id(r->msg));
        char why[512];
        snprintf(why, sizeof why,
                 "Interrupted again while the %.64s had not stopped at the first "
                 "interrupt (it was probably inside a long call to compiled code), so "
                 "its worker was restarted: variables and imports from earlier cells "
                 "are lost.",
                 r->execute ? "cell" : msg_type(r->msg));
        k->io.restart_worker(k->io.ctx, why);
        return;
    }
    log_info("interrupting the worker (%s)", reason);
    for (size_t i = 0; i < k->nshells; i++)
        interrupt_shell(k, &k->shells[i], false);
}

/* Whether add more bytes of text (or images) are past the cap (0: none). */
static bool over(const struct request_output *c, unsigned long cap, bool images,
                 size_t add)
{
    unsigned long sent = images ? c->images : c->text,
                  dropped = images ? c->images_dropped : c->text_dropped;
    return cap && add && (dropped || sent + add > cap);
}

/* What of a cell's reply counts as its output: every member but its status and
 * counts, empty ones as nothing (an ordinary reply adds nothing). */
static size_t reply_size(const json_t *content)
{
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)content, key, v) {
        if (strcmp(key, "status") == 0 || strcmp(key, "execution_count") == 0 ||
            strcmp(key, "sandpit_dropped") == 0 ||
            (json_is_array(v) && !json_array_size(v)) ||
            (json_is_object(v) && !json_object_size(v)))
            continue;
        n += strlen(key) + 4 + sizes_json(v);
    }
    return n;
}

/* A cell's reply past the text cap: its pager payload, traceback and user
 * expressions go, its error keeps its name and the start of its value. */
static json_t *cut_reply(struct request *r, const json_t *content)
{
    static const char *const keep[] = {"status", "execution_count", "sandpit_dropped"};
    json_t *c = json_object();
    if (!c)
        return NULL;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        json_t *v = json_object_get(content, keep[i]);
        if (v && !json_is_object(v) && !json_is_array(v))
            json_object_set(c, keep[i], v);
    }
    const char *ename = json_string_value(json_object_get(content, "ename"));
    const char *evalue = json_string_value(json_object_get(content, "evalue"));
    if (ename)
        json_object_set_new(c, "ename", json_stringn(ename, strnlen(ename, 120)));
    if (evalue)
        json_object_set_new(c, "evalue", json_stringn(evalue, strnlen(evalue, 500)));
    if (ename || evalue)
        json_object_set_new(c, "traceback", json_array());
    json_object_set_new(c, "payload", json_array());
    json_object_set_new(c, "user_expressions", json_object());
    size_t before = reply_size(content), after = reply_size(c);
    r->output.text += after;
    r->output.text_dropped += before > after ? before - after : 0;
    return c;
}

json_t *limits_reply(struct kernel *k, struct request *r, const json_t *content,
                     const json_t **metadata)
{
    if (sizes_json(*metadata) > LIMITS_REPLY_METADATA) {
        log_warn("dropped the metadata of a reply from the worker: over %d bytes",
                 LIMITS_REPLY_METADATA);
        *metadata = NULL;
    }
    const char *status = json_string_value(json_object_get(content, "status"));
    if (r->execute) {
        size_t size = reply_size(content);
        if (!over(&r->output, k->opts->max_output, false, size)) {
            r->output.text += size;
            return json_incref((json_t *)content);
        }
        return cut_reply(r, content);
    }
    if (!r->interrupted_for_timeout || (status && strcmp(status, "ok") == 0))
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

/* Whether a message of this kind of output is a display (data by MIME type). */
static bool is_display(const char *type)
{
    return strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0 ||
           strcmp(type, "update_display_data") == 0;
}

/* Takes the images (or all but them) out of a display's data; true if something
 * is left. */
static bool drop_parts(json_t *content, bool images)
{
    json_t *data = json_object_get(content, "data"), *v;
    const char *key;
    void *tmp;
    json_object_foreach_safe(data, tmp, key, v) {
        if (sizes_is_image(key, v) == images)
            json_object_del(data, key);
    }
    return json_object_size(data) > 0;
}

/* A display whose text is over the cap keeps its images and what they need to
 * show (their own short metadata, the display's id), nothing else. Returns the
 * size of what is left. */
static size_t keep_images(json_t *content)
{
    drop_parts(content, false);
    json_t *data = json_object_get(content, "data");
    json_t *md = json_object_get(content, "metadata"), *kept = json_object();
    json_t *id = json_object_get(json_object_get(content, "transient"), "display_id");
    const char *key;
    json_t *v;
    json_object_foreach(md, key, v) {
        if (json_object_get(data, key) && sizes_json(v) <= 256)
            json_object_set(kept, key, v);
    }
    json_t *slim = json_pack("{s:O, s:o}", "data", data, "metadata", kept);
    if (slim && json_is_string(id) && json_string_length(id) <= LINK_ID_MAX)
        json_object_set_new(slim, "transient", json_pack("{s:O}", "display_id", id));
    json_object_clear(content);
    if (slim)
        json_object_update(content, slim);
    json_decref(slim);
    return sizes_json(content);
}

/* Puts cut (consumed; NULL when out of memory: content is then emptied) in the
 * place of content, which held before bytes. Returns the bytes it loses. */
static size_t replace_content(json_t *content, json_t **cut, size_t before)
{
    json_object_clear(content);
    if (*cut)
        json_object_update(content, *cut);
    json_decref(*cut);
    *cut = NULL;
    size_t after = sizes_json(content);
    return before > after ? before - after : 0;
}

/* An error past the cap goes through once, cut to its name and the start of
 * its value (what the reply says too); the bytes it loses are dropped. */
static size_t cut_error(json_t *content)
{
    size_t before = sizes_json(content);
    const char *ename = json_string_value(json_object_get(content, "ename"));
    const char *evalue = json_string_value(json_object_get(content, "evalue"));
    size_t elen = ename ? strnlen(ename, 120) : 0,
           vlen = evalue ? strnlen(evalue, 500) : 0;
    char line[640];
    snprintf(line, sizeof line, "%.*s: %.*s", (int)elen, ename ? ename : "", (int)vlen,
             evalue ? evalue : "");
    json_t *cut = json_pack("{s:s#, s:s#, s:[s]}", "ename", ename ? ename : "", elen,
                            "evalue", evalue ? evalue : "", vlen, "traceback", line);
    return replace_content(content, &cut, before);
}

/* A result past the cap goes through once too (what an agent asks a cell
 * for): its text/plain alone, its beginning and end if long, with a line saying
 * how much was cut. Returns the bytes it loses. */
static size_t cut_result(json_t *content)
{
    enum { SIDE = 2000 };
    size_t before = sizes_json(content);
    json_t *data = json_object_get(content, "data");
    json_t *plain = json_object_get(data, "text/plain");
    const char *s = json_is_string(plain) ? json_string_value(plain) : "";
    size_t len = json_is_string(plain) ? json_string_length(plain) : 0;
    char *text = malloc(2 * SIDE + 96);
    size_t head = len, tail = len;
    if (text && len > 2 * SIDE) {
        for (head = SIDE; head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80;)
            head--; /* do not split a UTF-8 sequence */
        for (tail = len - SIDE; tail < len && ((unsigned char)s[tail] & 0xC0) == 0x80;)
            tail++;
        int n = (int)head; /* head <= SIDE */
        memcpy(text, s, head);
        n += snprintf(text + n, 96, "\n[... %zu bytes cut ...]\n", tail - head);
        memcpy(text + n, s + tail, len - tail);
        text[(size_t)n + len - tail] = 0;
    }
    json_t *cut = json_pack("{s:O?, s:{s:s}, s:{}}", "execution_count",
                            json_object_get(content, "execution_count"), "data",
                            "text/plain", text && len > 2 * SIDE ? text : s, "metadata");
    free(text);
    return replace_content(content, &cut, before);
}

/* Cuts a stream that crosses the text cap at it, on a character boundary; false
 * if nothing of it fits. */
static bool cut_stream(struct request_output *c, unsigned long cap, json_t *content,
                       size_t len)
{
    size_t room = c->text_dropped || c->text >= cap ? 0 : cap - c->text;
    const char *s = json_string_value(json_object_get(content, "text"));
    if (room > len)
        room = len;
    while (room > 0 && ((unsigned char)s[room] & 0xC0) == 0x80)
        room--; /* do not split a UTF-8 sequence */
    c->text += room;
    c->text_dropped += len - room;
    if (room > 0)
        json_object_set_new(content, "text", json_stringn(s, room));
    return room > 0;
}

/* What a stream holds but its text and a name of stdout or stderr: nothing, usually. */
static size_t stream_extras(const json_t *content)
{
    size_t n = 0;
    const char *key, *name;
    json_t *v;
    json_object_foreach((json_t *)content, key, v) {
        name = strcmp(key, "name") == 0 ? json_string_value(v) : NULL;
        if (strcmp(key, "text") != 0 &&
            !(name && (strcmp(name, "stdout") == 0 || strcmp(name, "stderr") == 0)))
            n += strlen(key) + 4 + sizes_json(v);
    }
    return n;
}

/* Counts one message against caps of text and image bytes (0: none) in c: its
 * whole size, content, metadata (extra: the message's own, and its buffers),
 * images apart. Returns false when it must be dropped. Output stops at a cap:
 * once something was dropped, what follows of that kind is too. A stream is cut
 * at the cap; a display keeps its images when its text is over the cap (they
 * count for all that is left of it), its text when its images are; an error
 * goes through once, cut short. */
static bool count_output(struct request_output *c, unsigned long text_cap,
                         unsigned long image_cap, const char *type, json_t *content,
                         json_t **metadata, size_t buffers)
{
    size_t extra = (json_object_size(*metadata) ? sizes_json(*metadata) : 0) + buffers;
    json_t *text_v = json_object_get(content, "text");
    if (strcmp(type, "stream") == 0 && json_is_string(text_v)) {
        size_t len = json_string_length(text_v), more = stream_extras(content) + extra;
        if (!more && over(c, text_cap, false, len))
            return cut_stream(c, text_cap, content, len);
        if (over(c, text_cap, false, len + more)) {
            c->text_dropped += len + more;
            return false;
        }
        c->text += len + more;
        return true;
    }
    size_t total = sizes_json(content) + extra;
    size_t images = is_display(type) ? sizes_images(content) : 0, text = total - images;
    if (!over(c, text_cap, false, text)) {
        if (!over(c, image_cap, true, images)) {
            c->text += text;
            c->images += images;
            return true;
        }
        c->images_dropped += images;
        bool left = drop_parts(content, true);
        if (left)
            c->text += text;
        return left;
    }
    if (images && !buffers && !over(c, image_cap, true, images)) {
        *metadata = NULL;
        size_t slim = keep_images(content);
        c->text_dropped += total > slim ? total - slim : 0;
        c->images += slim;
        return true;
    }
    if (strcmp(type, "error") == 0 && !c->error_cut) {
        c->error_cut = true;
        *metadata = NULL;
        c->text_dropped += cut_error(content) + extra;
        c->text += sizes_json(content);
        return true;
    }
    if (strcmp(type, "execute_result") == 0 && !c->result_cut) {
        c->result_cut = true;
        *metadata = NULL;
        c->text_dropped += cut_result(content) + extra - images;
        c->images_dropped += images;
        c->text += sizes_json(content);
        return true;
    }
    c->text_dropped += text;
    c->images_dropped += images;
    return false;
}

/* Output of no running request, against the caps per window for the kernel. */
static bool late_output(struct kernel *k, const json_t *parent, const char *type,
                        json_t *content, json_t **metadata, size_t buffers)
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
                             type, content, metadata, buffers);
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

/* The kernel's rate of messages: true if one more may go now. Past the rate,
 * the request (or the late output's window) is told once, and the cell runs on. */
static bool within_rate(struct kernel *k, struct request *r, const json_t *parent)
{
    struct kernel_limits *b = &k->limits;
    double now = loop_now(k->loop);
    b->rate_used -= (now - b->rate_at) * LIMITS_RATE;
    if (b->rate_used < 0)
        b->rate_used = 0;
    b->rate_at = now;
    if (b->rate_used + 1 <= LIMITS_BURST) {
        b->rate_used += 1;
        return true;
    }
    struct request_output *c = r ? &r->output : &b->late;
    c->rate_dropped++;
    if (!c->rate_told) {
        c->rate_told = true;
        char line[320];
        snprintf(line, sizeof line,
                 "\n[sandpit: more than %d messages a second of output (after a burst "
                 "of %d); messages past that rate are dropped while it lasts, and the "
                 "cell goes on]\n",
                 LIMITS_RATE, LIMITS_BURST);
        log_warn("output messages past %d a second are being dropped", LIMITS_RATE);
        json_t *n = json_pack("{s:s, s:s}", "name", "stderr", "text", line);
        outbox_publish(k, r ? r->msg->header : parent, "stream", &n);
    }
    return false;
}

bool limits_output(struct kernel *k, struct request *r, const json_t *parent,
                   const char *type, json_t *content, json_t **metadata, size_t buffers)
{
    if (!within_rate(k, r, parent))
        return false;
    unsigned long image_cap = options_max_images(k->opts);
    if (!k->opts->max_output && !image_cap)
        return true;
    if (!r)
        return late_output(k, parent, type, content, metadata, buffers);
    return count_output(&r->output, k->opts->max_output, image_cap, type, content,
                        metadata, buffers);
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
    if (r->output.rate_dropped) {
        snprintf(line, sizeof line,
                 "\n[sandpit: %lu messages of output were dropped past the rate of %d "
                 "a second]\n",
                 r->output.rate_dropped, LIMITS_RATE);
        limits_note(k, r, line);
    }
}
