/* model: the REST API's JSON (model.h). jupyter_server's gateway client
 * parses last_activity with strptime's %f and a literal Z: six fractional
 * digits and nothing after the Z, or its kernel list fails to load. */
#include "kernel/serve/model.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void model_date(double t, char *buf, size_t len)
{
    time_t s = (time_t)t; /* t > 0: truncation is the floor */
    /* To the nearest microsecond: a double holds today's seconds to about a
     * quarter of one, so truncating would lose one now and then. */
    long us = (long)((t - (double)s) * 1e6 + 0.5);
    if (us < 0)
        us = 0;
    if (us > 999999) {
        s++;
        us = 0;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06ldZ", day, us);
}

int model_id_new(char *id)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -errno;
    r[6] = (r[6] & 0x0f) | 0x40;
    r[8] = (r[8] & 0x3f) | 0x80;
    char *p = id;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        snprintf(p, 3, "%02x", r[i]);
        p += 2;
    }
    *p = 0;
    return 0;
}

bool model_id_valid(const char *s)
{
    if (!s || strlen(s) != MODEL_ID_LEN)
        return false;
    for (int i = 0; i < MODEL_ID_LEN; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        char c = s[i];
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

json_t *model_kernel_json(const struct model_kernel *k)
{
    char date[MODEL_DATE_LEN];
    model_date(k->last_activity, date, sizeof date);
    return json_pack("{s:s, s:s, s:s, s:s, s:i}", "id", k->id, "name", k->name,
                     "last_activity", date, "execution_state", k->state, "connections",
                     k->connections);
}

const char *model_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

json_t *model_error(int status, const char *message)
{
    return json_pack("{s:s, s:s}", "reason", model_reason(status), "message",
                     message ? message : "");
}
