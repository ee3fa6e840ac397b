/* log: one write() per line, so lines from the two processes and from the
 * worker's threads do not interleave mid-line.
 *
 * What the worker or a client without the key can make the supervisor log is
 * bounded here too (struct log_limit): a kernel's log is a file on the user's
 * disk, which no cell's --max-file counts, so a cell that could write to it
 * without a bound could fill the disk. */
#include "kernel/util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_role = "kernel";
static enum log_level log_threshold = LOG_WARN;
static int log_fd = 2;
static void (*log_sink)(enum log_level level, const char *line, size_t len);
static char log_context[160]; /* "" or what every line names, with the date */

static const char *const names[] = {"error", "warning", "info", "debug"};

void log_init(const char *role, enum log_level level, int fd)
{
    log_role = role;
    log_threshold = level;
    log_fd = fd;
}

int log_parse_level(const char *name, enum log_level *out)
{
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(name, names[i]) == 0 || (i == LOG_WARN && strcmp(name, "warn") == 0)) {
            *out = (enum log_level)i;
            return 0;
        }
    return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
    return level <= LOG_DEBUG ? names[level] : "?";
}

void log_set_context(const char *context)
{
    snprintf(log_context, sizeof log_context, "%s", context ? context : "");
}

void log_set_sink(void (*fn)(enum log_level level, const char *line, size_t len))
{
    log_sink = fn;
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
    int saved = errno;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    int n;
    if (log_context[0]) {
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line,
                     "[sandpit %s %04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s] ", log_role,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level], log_context);
    } else {
        localtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line, "[sandpit %s %02d:%02d:%02d.%03ld %s] ", log_role,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                     names[level]);
    }
    int head = n;
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2;
    /* One line each: what the message quotes (a frame's kind, a path, a
     * client's msg_type) may come from the worker or a client, and a newline
     * or an escape in it must not make a line that looks like the kernel's. */
    for (int i = head > 0 ? head : 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    if (log_sink) {
        line[n] = 0;
        log_sink(level, line, (size_t)n);
    } else {
        line[n++] = '\n';
        ssize_t w = write(log_fd, line, (size_t)n);
        (void)w;
    }
    errno = saved;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

static double log_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double refill(double have, double per_s, double burst, double dt)
{
    have += per_s * dt;
    return have > burst ? burst : have;
}

/* The limit's own lines: they pass whatever the limit says, and there are at
 * most two for each run of lines dropped, which the limit bounds. */
static void limit_says(struct log_limit *l, bool ends)
{
    if (ends) {
        log_msg(LOG_WARN, "%llu %s (%llu bytes) were not logged: over the log's limit",
                l->dropped_lines, l->what, l->dropped_bytes);
        l->dropped_lines = l->dropped_bytes = 0;
    } else if (l->over) {
        log_msg(LOG_WARN,
                "%s have reached this kernel's limit of %llu bytes in the log: the "
                "rest are not logged",
                l->what, l->max_bytes);
    } else if (l->burst_bytes) {
        log_msg(LOG_WARN,
                "%s are coming faster than the log takes them (%.0f lines or %.0f "
                "bytes a minute): they are dropped, and counted",
                l->what, l->lines_per_s * 60, l->bytes_per_s * 60);
    } else {
        log_msg(LOG_WARN,
                "%s are coming faster than the log takes them (%.0f a minute): they "
                "are dropped, and counted",
                l->what, l->lines_per_s * 60);
    }
}

/* The limits that have dropped lines, for log_limits_flush. */
#define LOG_LIMITS_KEPT 16
static struct log_limit *dropping[LOG_LIMITS_KEPT];

static void remember(struct log_limit *l)
{
    for (int i = 0; i < LOG_LIMITS_KEPT; i++)
        if (dropping[i] == l || !dropping[i]) {
            dropping[i] = l;
            return;
        }
}

void log_limits_flush(void)
{
    for (int i = 0; i < LOG_LIMITS_KEPT && dropping[i]; i++)
        if (dropping[i]->dropped_lines)
            limit_says(dropping[i], true);
}

bool log_limit_take(struct log_limit *l, size_t len)
{
    double now = log_now();
    if (!l->started) {
        l->started = true;
        l->lines = l->burst_lines;
        l->bytes = l->burst_bytes;
        l->at = now;
    }
    double dt = now > l->at ? now - l->at : 0;
    l->at = now;
    l->lines = refill(l->lines, l->lines_per_s, l->burst_lines, dt);
    l->bytes = refill(l->bytes, l->bytes_per_s, l->burst_bytes, dt);
    bool pass = !l->over && l->lines >= 1 && (!l->burst_bytes || l->bytes >= (double)len);
    if (pass && l->max_bytes && l->total + len > l->max_bytes) {
        l->over = true;
        pass = false;
        limit_says(l, false);
    }
    if (!pass) {
        if (!l->dropping && !l->over)
            limit_says(l, false);
        if (!l->dropping)
            remember(l);
        l->dropping = true;
        l->dropped_lines++;
        l->dropped_bytes += len;
        return false;
    }
    if (l->dropping)
        limit_says(l, true);
    l->dropping = false;
    l->lines -= 1;
    l->bytes -= (double)len;
    l->total += len;
    return true;
}

void log_limited(struct log_limit *l, enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    char probe[1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(probe, sizeof probe, fmt, ap);
    va_end(ap);
    if (!log_limit_take(l, n > 0 ? (size_t)n : 0))
        return;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

void log_plain(const char *fmt, ...)
{
    int saved = errno;
    char line[2048];
    int head = 0;
    if (log_context[0]) {
        /* A relayed line of a gateway's kernel names it too, before its own
         * prefix. */
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        head = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02dZ %s ",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                        tm.tm_min, tm.tm_sec, log_context);
        if (head < 0 || (size_t)head >= sizeof line)
            head = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + head, sizeof line - (size_t)head, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n >= sizeof line - (size_t)head)
        n = (int)(sizeof line - (size_t)head) - 1;
    if (n > 0)
        n += head;
    if (n > 0) {
        ssize_t w =
            write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
    errno = saved;
}
