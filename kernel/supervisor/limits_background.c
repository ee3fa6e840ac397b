/* limits_background: the worker's CPU time while none of its requests runs.
 *
 * A thread that a cell leaves running is out of reach of the cell's time limit.
 * While no request runs, what the worker uses of the CPU is that thread's (the
 * worker runs nothing else between requests), and the supervisor reads it from
 * /proc, where the code cannot change it: a bucket of --timeout seconds of CPU,
 * refilled at LIMITS_BACKGROUND_RATE of a CPU, lets light background work (a
 * progress bar, a widget's timer) go on for ever and stops a busy loop. When the
 * bucket is empty the worker is restarted, and the next cell says why. */
#include "kernel/supervisor/limits.h"

#include <stdio.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "kernel/supervisor/loop.h"

/* The shortest and longest wait between two looks at the worker's CPU time. */
#define BACKGROUND_LOOK_MIN_S 0.25
#define BACKGROUND_LOOK_MAX_S 30.0

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

void limits_background_watch(struct kernel *k)
{
    struct kernel_limits *b = &k->limits;
    if (b->background_watching || background_budget(k) <= 0 ||
        k->io.worker(k->io.ctx) != KERNEL_WORKER_READY || kernel_any_running(k))
        return;
    background_settle(k, false);
    b->background_watching = true;
    background_arm(k);
}

void limits_background_unwatch(struct kernel *k)
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
    if (k->io.worker(k->io.ctx) != KERNEL_WORKER_READY || kernel_any_running(k)) {
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
    limits_background_watch(k);
}
