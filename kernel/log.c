/* log: one write() per line, so lines from the two processes and from the
 * worker's threads do not interleave mid-line. */
#include "kernel/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_role = "kernel";
static enum log_level log_threshold = LOG_WARN;
static int log_fd = 2;

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

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    int saved = errno;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int n =
        snprintf(line, sizeof line, "[sandpit %s %02d:%02d:%02d.%03ld %s] ", log_role,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, (size_t)n);
    (void)w;
    errno = saved;
}

void log_plain(const char *fmt, ...)
{
    int saved = errno;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) {
        ssize_t w =
            write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
    errno = saved;
}
