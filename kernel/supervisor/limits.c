/* limits: time limits, interrupts and their escalation, and the output cap.
 *
 * A time limit is a time event armed when the request goes to the worker. When
 * it fires, the request is interrupted with reason "timeout", so that the
 * worker reports a TimeoutError rather than a KeyboardInterrupt. Any interrupt
 * arms a second time event, LIMITS_INTERRUPT_GRACE_S later: a cell that is
 * still running then (inside a long call to compiled code, or ignoring
 * SIGINT) has its worker restarted, and the error says so. The main shell's
 * request is interrupted with SIGINT, which Python turns into
 * KeyboardInterrupt in the main thread; a subshell's, by the note alone, on
 * which the worker raises the exception in that subshell's thread.
 *
 * The timers find their request by their id rather than through a pointer, so
 * a request that ended (and was freed) between arming and firing cannot be
 * reached: ending a request removes its timers anyway. */
#include "kernel/supervisor/limits.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "kernel/link/frames.h"
#include "kernel/log.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/outbox.h"

void limits_set_timeout(struct kernel *k, struct request *r)
{
    r->timeout_s = k->opts->timeout_s;
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
    if (r->interrupted_for_timeout)
        snprintf(why, sizeof why,
                 "cell exceeded its time limit of %g s and did not stop when "
                 "interrupted, so its worker was restarted: variables and imports "
                 "from earlier cells are lost.",
                 r->timeout_s);
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

void limits_start(struct kernel *k, struct request *r)
{
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
}

void limits_interrupt_all(struct kernel *k, const char *reason)
{
    bool any = false;
    for (size_t i = 0; i < k->nshells; i++)
        any |= k->shells[i].current != NULL;
    if (!any)
        return;
    log_info("interrupting the worker (%s)", reason);
    for (size_t i = 0; i < k->nshells; i++)
        interrupt_shell(k, &k->shells[i], false);
}

bool limits_output(struct kernel *k, struct request *r, const char *type, json_t *content)
{
    if (!r || !k->opts->max_output)
        return true;
    size_t bytes = 0;
    if (strcmp(type, "stream") == 0) {
        bytes = json_string_length(json_object_get(content, "text"));
    } else if (strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0 ||
               strcmp(type, "update_display_data") == 0) {
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(content, "data"), key, v)
        {
            bytes += json_is_string(v) ? json_string_length(v) : 64;
        }
    } else {
        return true;
    }
    if (r->dropped_bytes || r->output_bytes + bytes > k->opts->max_output) {
        /* A stream is cut at the cap, so the user sees output up to it. */
        if (!r->dropped_bytes && strcmp(type, "stream") == 0) {
            size_t room = k->opts->max_output - r->output_bytes;
            const char *text = json_string_value(json_object_get(content, "text"));
            while (room > 0 && ((unsigned char)text[room] & 0xC0) == 0x80)
                room--; /* do not split a UTF-8 sequence */
            if (room > 0) {
                json_object_set_new(content, "text", json_stringn(text, room));
                r->output_bytes += room;
                r->dropped_bytes += bytes - room;
                return true;
            }
        }
        r->dropped_bytes += bytes;
        return false;
    }
    r->output_bytes += bytes;
    return true;
}

void limits_report_dropped(struct kernel *k, struct request *r,
                           unsigned long worker_dropped)
{
    r->dropped_bytes += worker_dropped;
    if (!r->dropped_bytes)
        return;
    char line[256];
    snprintf(line, sizeof line,
             "\n[sandpit: output limit of %lu bytes reached; %lu more bytes of output "
             "were dropped]\n",
             k->opts->max_output, r->dropped_bytes);
    json_t *c = json_pack("{s:s, s:s}", "name", "stderr", "text", line);
    outbox_publish(k, r->msg->header, "stream", &c);
}
