/* log: levelled lines on stderr (the kernel's log, which Jupyter keeps).
 * Both processes log; each line names which. Nothing is ever written to
 * stdout: a kernel's stdout belongs to whoever started it. */
#ifndef SANDPIT_LOG_H
#define SANDPIT_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the process's role ("kernel", "worker"), threshold and output fd. */
void log_init(const char *role, enum log_level level, int fd);
/* Parses "error", "warning", "info", "debug"; -EINVAL for anything else. */
int log_parse_level(const char *name, enum log_level *out);
const char *log_level_name(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes a preformatted line to the log as it is (for lines relayed from the
 * worker, which carry their own prefix). */
void log_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
