/* worker_log: one limit for everything the worker logs.
 *
 * The limit is the kernel's (one process, one kernel), so a crash or a
 * restart, which brings a new worker with a new pipe, does not start it
 * again. Its numbers: a worker that is not attacked logs a few lines at its
 * start and seldom one while it runs, far below 600 lines or 64 KiB a minute;
 * 4 MiB in all is days of that. A cell that writes without end costs the log
 * those 64 KiB a minute and then nothing. */
#include "kernel/supervisor/worker_log.h"

#include <stdio.h>

#include "kernel/util/log.h"

static struct log_limit limit = {
    .what = "lines from the worker",
    .lines_per_s = 10,
    .burst_lines = 600,
    .bytes_per_s = (64 << 10) / 60.0,
    .burst_bytes = 64 << 10,
    .max_bytes = 4u << 20,
};

void worker_log_line(const char *text, size_t len)
{
    if (len > WORKER_LOG_LINE_MAX)
        len = WORKER_LOG_LINE_MAX;
    if (!log_limit_take(&limit, len))
        return;
    char line[WORKER_LOG_LINE_MAX + 1];
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        line[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    line[len] = 0;
    /* The mark says these lines came from the worker, whose code the user's
     * cells can make say anything. */
    log_plain("worker| %s\n", line);
}
