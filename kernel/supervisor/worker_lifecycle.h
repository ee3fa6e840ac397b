/* worker_lifecycle: the worker's life as the supervisor manages it: start it with its
 * command line and environment, give it a deadline to say hello, start
 * another when it dies or must be replaced (answering what it was running),
 * and back off when workers keep dying before they are ready. The struct
 * borrows the kernel, the child and the loop, and owns the environment. */
#ifndef SANDPIT_WORKER_LIFECYCLE_H
#define SANDPIT_WORKER_LIFECYCLE_H

#include <stdbool.h>

#include "kernel/options.h"
#include "kernel/supervisor/worker_process.h"
#include "kernel/supervisor/kernel.h"
#include "kernel/supervisor/worker_template.h"

#define RESPAWN_HELLO_TIMEOUT_S 60.0 /* a worker that has not said hello is stuck */
#define RESPAWN_MAX_STOPS       3    /* a worker stopped more often is restarted */
/* The next worker starts from the template once the kernel has run nothing for
 * this long after a worker became ready: not beside the first cells of the
 * new one, whose CPU its start (some 15 ms of it) would take. */
#define RESPAWN_SPARE_AFTER_IDLE_S 0.1
/* The worker, beside the supervisor's program: a library that Python's own
 * program runs with (kernel/worker_preload.c) where sandpit is built so
 * (SANDPIT_WORKER_PYTHON, Python's program, is then defined), else a program. */
#ifdef SANDPIT_WORKER_PYTHON
#define RESPAWN_PROGRAM "sandpit-worker.so"
#else
#define RESPAWN_PROGRAM "sandpit-worker"
#endif

struct respawn {
    struct kernel *k;
    struct child *child;
    struct loop *loop;
    const struct options *opts;
    char *program;         /* the worker's program, or its library, beside ours (owned) */
    char **env;            /* the environment workers get (worker_env_new) */
    int start_failures;    /* consecutive workers that died before saying hello */
    long long retry_timer; /* a delayed start; 0: none */
    long long hello_timer; /* the start-up deadline; 0: none */
    long long spare_timer; /* the next worker's start, once idle; 0: none */
    int stops;             /* times the running worker was stopped (SIGSTOP, ...) */
    struct worker_template *tpl; /* forks workers once ready; NULL: none (owned) */
    bool tpl_tried;              /* a template was started once: not again */
    char *tpl_history; /* the history's folder in the template's options (owned) */
    unsigned started;  /* workers started */
};

/* The worker's program (or library), beside this binary, in out: 0, or -errno
 * when it cannot be found or run, with why in why (the path it looked for). */
int respawn_worker_program(char *out, size_t len, char *why, size_t whylen);
/* 0, or -errno when the worker's program cannot be found or run (logged). */
int respawn_init(struct respawn *w, struct kernel *k, struct child *c, struct loop *l,
                 const struct options *opts);
void respawn_release(struct respawn *w);

/* Starts a worker now (or, if that fails, in a second): forked from the
 * worker template when it is ready, else exec'd. The second start (the first
 * worker replaced) starts the template too. */
void respawn_start(struct respawn *w);
/* Kills the worker and starts another; running requests are answered with
 * why. */
void respawn_restart(struct respawn *w, const char *why);
/* The worker's process ended with status (from waitpid): what it ran is
 * answered with how it ended, and another starts, at once unless workers keep
 * dying before they are ready. */
void respawn_reaped(struct respawn *w, int status);
/* The worker's process was stopped by signal sig (waitpid's WIFSTOPPED): it is
 * continued, and the requests it runs are told so on stderr; one stopped more
 * than RESPAWN_MAX_STOPS times is restarted instead. A stopped worker would
 * otherwise hang its cell without a word until an interrupt escalated. */
void respawn_stopped(struct respawn *w, int sig);
/* A child that is not the worker was reaped: true if it was the template,
 * which is then down (workers are exec'd from then on). */
bool respawn_reaped_other(struct respawn *w, pid_t pid, int status);
/* The worker said hello: true if it was starting (it is ready now). */
bool respawn_hello(struct respawn *w);
/* What the worker can do for requests now. */
enum kernel_worker respawn_state(const struct respawn *w);

#endif
