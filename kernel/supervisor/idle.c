/* idle: a once-a-second look at the shells; the activity file is small and
 * written whole with tfile (a new file, renamed into place), only when
 * something changed, never on the way of a request. */
#include "kernel/supervisor/idle.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/supervisor/kernel.h"
#include "kernel/supervisor/loop.h"
#include "sandbox/tfile.h"

#define IDLE_LOOK_S 1.0

static bool kernel_busy(const struct kernel *k)
{
    for (size_t i = 0; i < k->nshells; i++)
        if (k->shells[i].current || k->shells[i].queue_head)
            return true;
    return false;
}

static void write_activity(struct idle *d)
{
    if (d->dirfd < 0)
        return;
    json_t *j =
        json_pack("{s:i, s:s, s:b, s:I}", "pid", (json_int_t)getpid(), "workspace",
                  d->k->workspace ? d->k->workspace : "", "busy", d->busy, "since",
                  (json_int_t)(time(NULL) - (time_t)(monotime_now() - d->last)));
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text &&
        tfile_write(d->dirfd, d->name, text, strlen(text), 0600, TFILE_REPLACE) == 0) {
        d->written = true;
        d->written_busy = d->busy;
        d->written_last = d->last;
    }
    free(text);
}

static double on_look(struct loop *l, long long id, void *data)
{
    (void)id;
    struct idle *d = data;
    double now = monotime_now();
    bool was_busy = d->busy;
    d->busy = kernel_busy(d->k);
    if (d->busy && !was_busy)
        d->last = now; /* "since" is when it became busy */
    else if (!d->busy && was_busy)
        d->last = now; /* and when it became idle */
    if (!d->written || d->written_busy != d->busy ||
        (!d->busy && d->written_last != d->last))
        write_activity(d);
    if (d->timeout_s > 0 && !d->busy && now - d->last >= d->timeout_s) {
        log_info("no request for %.0f s (--idle-timeout): shutting down", now - d->last);
        loop_stop(l);
        return LOOP_NOMORE;
    }
    return IDLE_LOOK_S;
}

int idle_start(struct idle *d, struct kernel *k, const char *connection_file,
               double timeout_s)
{
    memset(d, 0, sizeof *d);
    d->dirfd = -1;
    d->k = k;
    d->timeout_s = timeout_s;
    d->last = monotime_now();
    /* Beside the connection file, in the folder it was given in (which may be
     * one a cell can write: tfile, on that folder's descriptor). */
    const char *slash = connection_file ? strrchr(connection_file, '/') : NULL;
    const char *base = slash ? slash + 1 : connection_file;
    size_t n = base ? strlen(base) : 0;
    if (n > 5 && strcmp(base + n - 5, ".json") == 0 && n + 4 < sizeof d->name) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - connection_file) : 1,
                 slash ? connection_file : ".");
        snprintf(d->name, sizeof d->name, "%.*s.activity", (int)(n - 5), base);
        d->dirfd = tfile_open_root(slash == connection_file ? "/" : dir);
    }
    write_activity(d);
    d->timer = loop_add_timer(k->loop, IDLE_LOOK_S, on_look, d);
    return d->timer > 0 ? 0 : -ENOMEM;
}

void idle_touch(struct idle *d)
{
    d->last = monotime_now();
}

void idle_release(struct idle *d)
{
    if (d->dirfd >= 0) {
        if (d->written)
            tfile_remove_tree(d->dirfd, d->name);
        close(d->dirfd);
    }
    d->dirfd = -1;
}
