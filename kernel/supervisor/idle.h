/* idle: the kernel's activity, for --idle-timeout and `sandpit status --all`.
 *
 * The kernel is idle when no request has come on shell or control and no
 * request is queued or running (a cell, in any subshell). Once a second a
 * timer looks: after --idle-timeout seconds idle the kernel shuts down as on
 * shutdown_request. Its activity file, beside the connection file with
 * ".activity" for ".json", says {"pid", "workspace", "busy", "since": the
 * Unix time it became busy, or of its last request when idle}; it is
 * written when that changes (at most once a look) and removed at exit, so
 * that `sandpit status --all` can list every kernel of the user without
 * sending any of them a request. A gateway's kernel has none: its folder is
 * the gateway's. */
#ifndef SANDPIT_IDLE_H
#define SANDPIT_IDLE_H

#include <limits.h>
#include <stdbool.h>

struct kernel;
struct loop;

struct idle {
    struct kernel *k;    /* borrowed */
    double timeout_s;    /* 0: never stops by itself */
    double last;         /* monotonic time of the last activity */
    double written_last; /* last, as the activity file has it */
    bool busy, written_busy;
    bool written;
    long long timer;
    int dirfd;      /* the connection file's folder, or -1: no activity file */
    char name[256]; /* the activity file's name in it */
};

/* Starts the watch (k->loop must be set). connection_file may be NULL (no
 * activity file). 0 or -errno. */
int idle_start(struct idle *d, struct kernel *k, const char *connection_file,
               double timeout_s);

/* A request came. */
void idle_touch(struct idle *d);

/* Removes the activity file. */
void idle_release(struct idle *d);

#endif
