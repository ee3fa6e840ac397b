/* model: the JSON that the REST API answers with, as jupyter_server writes
 * it: the kernel model (its last_activity in the one form jupyter_server's
 * gateway client parses, "%Y-%m-%dT%H:%M:%S.%fZ"), the error body
 * {"reason", "message"}, and the kernel ids (UUID 4). Pure; every json_t
 * returned is new (caller decrefs), NULL when out of memory. */
#ifndef SANDPIT_SERVE_MODEL_H
#define SANDPIT_SERVE_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MODEL_ID_LEN   36 /* a UUID's characters */
#define MODEL_DATE_LEN 32 /* room for a date with microseconds */

/* t (seconds since the epoch, CLOCK_REALTIME) as 2024-01-02T03:04:05.000006Z. */
void model_date(double t, char *buf, size_t len);

/* A new UUID 4 into id (MODEL_ID_LEN + 1 bytes). 0 or -errno. */
int model_id_new(char *id);

/* Whether s is a UUID in lower-case hex, as model_id_new makes them. */
bool model_id_valid(const char *s);

struct model_kernel {
    const char *id, *name, *state;
    double last_activity;
    int connections;
};

json_t *model_kernel_json(const struct model_kernel *k);

/* {"reason": the status's phrase, "message": message}. */
json_t *model_error(int status, const char *message);

/* The reason phrase of an HTTP status ("Not Found"). */
const char *model_reason(int status);

#endif
