/* log: levelled lines on stderr (the kernel's log, which Jupyter keeps).
 * Both processes log; each line names which. Nothing is ever written to
 * stdout: a kernel's stdout belongs to whoever started it. */
#ifndef SANDPIT_LOG_H
#define SANDPIT_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the process's role ("kernel", "worker"), threshold and output fd. */
void log_init(const char *role, enum log_level level, int fd);
/* What every line names after its level, with the date (UTC, ISO 8601) before
 * it: the gateway's kernel id and user (userdir.h). NULL or "": none,
 * and the time alone. */
void log_set_context(const char *context);
/* Parses "error", "warning", "info", "debug"; -EINVAL for anything else. */
int log_parse_level(const char *name, enum log_level *out);
const char *log_level_name(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes a preformatted line to the log as it is (for lines relayed from the
 * worker, which carry their own prefix). */
void log_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where log lines go instead of a descriptor (the worker, once cells run: over
 * its link), or NULL for the descriptor again. fn gets a whole line, without
 * its newline; it must not log. */
void log_set_sink(void (*fn)(enum log_level level, const char *line, size_t len));

/* A limit on lines that the worker or a client without the key can cause (the
 * worker's own log, frames the supervisor drops, messages it refuses): a token
 * bucket of lines and one of bytes, and a total over the kernel's life. Past
 * it, lines are counted rather than written: one line says that they are
 * dropped, and one, when lines pass again, how many were. Both are bounded by
 * the limit, so the log stays bounded whatever comes. One process, one thread
 * (the supervisor's loop). */
struct log_limit {
    const char *what;                /* names them: "lines from the worker" */
    double lines_per_s, burst_lines; /* the lines' bucket */
    double bytes_per_s, burst_bytes; /* the bytes'; 0: bytes are not limited */
    unsigned long long max_bytes;    /* over the kernel's life; 0: no total */
    /* State, zero to begin with. */
    bool started, dropping, over;
    double lines, bytes, at;
    unsigned long long total, dropped_lines, dropped_bytes;
};

/* Whether a line of len bytes may be written now (and counts it if so); false
 * counts it as dropped. May log the limit's own lines first. */
bool log_limit_take(struct log_limit *l, size_t len);

/* Says, for every limit that is dropping lines, how many it dropped (at the
 * end of the kernel, whose last lines may have been dropped). */
void log_limits_flush(void);

/* log_msg, within the limit l. */
void log_limited(struct log_limit *l, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
