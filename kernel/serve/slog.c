/* slog: text or JSON lines (slog.h). The JSON sink takes the line log.c
 * made (control characters already replaced) and keeps its message, after
 * the bracketed prefix; jansson escapes it. */
#include "kernel/serve/slog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/serve/model.h"
#include "kernel/util/userdir.h"

static char cur_id[64], cur_user[64];
static bool as_json;

static void json_sink(enum log_level level, const char *line, size_t len)
{
    const char *msg = line;
    const char *end = memchr(line, ']', len);
    if (line[0] == '[' && end && end + 2 <= line + len)
        msg = end + 2;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char date[MODEL_DATE_LEN];
    model_date((double)ts.tv_sec + ts.tv_nsec / 1e9, date, sizeof date);
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s%}", "time", date, "level", log_level_name(level),
                  "logger", "sandpit-serve", "message", msg, (size_t)(line + len - msg));
    if (o && cur_id[0])
        json_object_set_new(o, "kernel_id", json_string(cur_id));
    if (o && cur_user[0])
        json_object_set_new(o, "user", json_string(cur_user));
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    if (text) {
        size_t n = strlen(text);
        text[n] = '\n';
        ssize_t w = write(2, text, n + 1);
        (void)w;
    }
    free(text);
    json_decref(o);
}

void slog_init(enum log_level level, bool json)
{
    log_init("serve", level, 2);
    as_json = json;
    if (json)
        log_set_sink(json_sink);
}

void slog_kernel(const char *id, const char *user)
{
    snprintf(cur_id, sizeof cur_id, "%s", id ? id : "");
    snprintf(cur_user, sizeof cur_user, "%s", user && userdir_valid(user) ? user : "");
    if (as_json)
        return;
    char context[160];
    if (id)
        userdir_log_context(id, cur_user[0] ? cur_user : NULL, context, sizeof context);
    log_set_context(id ? context : NULL);
}
