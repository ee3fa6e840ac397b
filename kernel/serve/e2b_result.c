/* e2b_result: a cell's Jupyter messages as E2B's NDJSON (e2b_result.h).
 * The shapes follow E2B's code-interpreter server (its messaging.py and
 * api/models/): a result's known MIME types under short names (text/plain ->
 * "text", image/png -> "png", ...), E2B's own e2b/data and e2b/chart as
 * "data" and "chart", every other MIME type in "extra" (always there, {} when
 * empty), a text/plain between matching quotes without them (E2B strips the
 * quotes of a repr'd string), the traceback's lines joined with nothing
 * between them, and one error a cell. The hard part is the hostile message:
 * E2B's server trusts ipykernel and takes whatever types come; here a known
 * member of the wrong type is dropped, so a client is never handed a number
 * where its SDK reads a string. */
#include "kernel/serve/e2b_result.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void e2b_result_cell_init(struct e2b_result_cell *c)
{
    memset(c, 0, sizeof *c);
}

/* A new object with "type": type first, as E2B's models put it. */
static json_t *object_of_type(const char *type)
{
    json_t *o = json_object();
    if (o && json_object_set_new(o, "type", json_string(type)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Shares v (a borrowed value of the content's) under key. 0 or -ENOMEM. */
static int set_shared(json_t *o, const char *key, json_t *v)
{
    return json_object_set(o, key, v) < 0 ? -ENOMEM : 0;
}

static int set_new(json_t *o, const char *key, json_t *v)
{
    return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

/* The content's member key if it is a string, else NULL (borrowed). */
static json_t *string_member(const json_t *content, const char *key)
{
    json_t *v = json_object_get(content, key);
    return json_is_string(v) ? v : NULL;
}

json_t *e2b_result_error(const char *name, const char *value, const char *traceback)
{
    json_t *o = object_of_type("error");
    if (!o)
        return NULL;
    if (set_new(o, "name", json_string(name ? name : "")) < 0 ||
        set_new(o, "value", json_string(value ? value : "")) < 0 ||
        set_new(o, "traceback", json_string(traceback ? traceback : "")) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *e2b_result_keepalive(void)
{
    return object_of_type("keepalive");
}

json_t *e2b_result_end(void)
{
    return object_of_type("end_of_execution");
}

/* The traceback's string lines joined with nothing between them (each line
 * of IPython's ends with its own newline, or is a whole block), the first
 * E2B_RESULT_MAX_TRACEBACK of them; anything else in it is skipped. A new
 * string, "" when tb is not an array; NULL when out of memory. */
static json_t *joined_traceback(const json_t *tb)
{
    size_t n = json_is_array(tb) ? json_array_size(tb) : 0;
    if (n > E2B_RESULT_MAX_TRACEBACK)
        n = E2B_RESULT_MAX_TRACEBACK;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *line = json_array_get(tb, i);
        if (!json_is_string(line))
            continue;
        size_t len = json_string_length(line);
        if (len > SIZE_MAX - 1 - total)
            return NULL;
        total += len;
    }
    char *buf = malloc(total + 1);
    if (!buf)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *line = json_array_get(tb, i);
        if (!json_is_string(line))
            continue;
        size_t len = json_string_length(line);
        memcpy(buf + at, json_string_value(line), len);
        at += len;
    }
    buf[at] = '\0';
    /* Whole UTF-8 strings end to end are UTF-8: json_stringn checks anyway. */
    json_t *s = json_stringn(buf, at);
    free(buf);
    return s;
}

/* From an error message's content, or an execute_reply's with status
 * "error": its ename, evalue and traceback, "" for any that is missing or
 * not a string. */
static int error_from(const json_t *content, json_t **out)
{
    json_t *name = string_member(content, "ename");
    json_t *value = string_member(content, "evalue");
    json_t *o = object_of_type("error");
    if (!o)
        return -ENOMEM;
    int rc = name ? set_shared(o, "name", name) : set_new(o, "name", json_string(""));
    if (rc == 0)
        rc = value ? set_shared(o, "value", value) : set_new(o, "value", json_string(""));
    if (rc == 0)
        rc = set_new(o, "traceback",
                     joined_traceback(json_object_get(content, "traceback")));
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

static int convert_stream(const char *date, const json_t *content, json_t **out)
{
    json_t *name = string_member(content, "name");
    json_t *text = string_member(content, "text");
    if (!name || !text)
        return -EINVAL;
    const char *n = json_string_value(name);
    if (strcmp(n, "stdout") != 0 && strcmp(n, "stderr") != 0)
        return 0;
    json_t *o = object_of_type(n);
    if (!o)
        return -ENOMEM;
    int rc = set_shared(o, "text", text);
    if (rc == 0 && date)
        rc = set_new(o, "timestamp", json_string(date));
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* text/plain as E2B gives it: a text that starts and ends with the same
 * quote (a repr'd string, 'abc') loses both, as E2B's Result does. The
 * quotes are ASCII: what is left is still UTF-8. A new or shared string. */
static json_t *result_text(json_t *text)
{
    const char *s = json_string_value(text);
    size_t len = json_string_length(text);
    if (len >= 1 && (s[0] == '\'' || s[0] == '"') && s[len - 1] == s[0])
        return json_stringn(len >= 2 ? s + 1 : "", len >= 2 ? len - 2 : 0);
    return json_incref(text);
}

/* A MIME type of the result's that has a name of its own in E2B's result,
 * and whether its value must be a string (else an object). */
struct known_mime {
    const char *mime, *key;
    bool string;
};

static const struct known_mime known_mimes[] = {
    {"text/plain", "text", true},        {"text/html", "html", true},
    {"text/markdown", "markdown", true}, {"image/svg+xml", "svg", true},
    {"image/png", "png", true},          {"image/jpeg", "jpeg", true},
    {"application/pdf", "pdf", true},    {"text/latex", "latex", true},
    {"application/json", "json", false}, {"application/javascript", "javascript", true},
    {"e2b/data", "data", false},         {"e2b/chart", "chart", false},
};
#define KNOWN_MIMES (sizeof known_mimes / sizeof known_mimes[0])

static const struct known_mime *known_mime(const char *mime)
{
    for (size_t i = 0; i < KNOWN_MIMES; i++)
        if (strcmp(known_mimes[i].mime, mime) == 0)
            return &known_mimes[i];
    return NULL;
}

/* The known MIME types of data in o, in E2B's order, each only when its
 * value has the type E2B's model gives it. */
static int result_known(json_t *o, const json_t *data)
{
    for (size_t i = 0; i < KNOWN_MIMES; i++) {
        const struct known_mime *k = &known_mimes[i];
        json_t *v = json_object_get(data, k->mime);
        if (!v || (k->string ? !json_is_string(v) : !json_is_object(v)))
            continue;
        int rc = i == 0 ? set_new(o, k->key, result_text(v)) : set_shared(o, k->key, v);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Every other MIME type of data, the first E2B_RESULT_MAX_EXTRA of them, in
 * a new object (E2B's "extra": {} when there are none). NULL: no memory. */
static json_t *result_extra(const json_t *data)
{
    json_t *extra = json_object();
    if (!extra)
        return NULL;
    const char *mime;
    json_t *v;
    size_t kept = 0;
    json_object_foreach((json_t *)data, mime, v) {
        if (known_mime(mime))
            continue;
        if (kept == E2B_RESULT_MAX_EXTRA)
            break;
        if (json_object_set(extra, mime, v) < 0) {
            json_decref(extra);
            return NULL;
        }
        kept++;
    }
    return extra;
}

static int convert_result(const json_t *content, bool main, json_t **out)
{
    json_t *data = json_object_get(content, "data");
    if (!json_is_object(data))
        return -EINVAL;
    json_t *o = object_of_type("result");
    if (!o)
        return -ENOMEM;
    int rc = result_known(o, data);
    if (rc == 0)
        rc = set_new(o, "extra", result_extra(data));
    if (rc == 0)
        rc = set_new(o, "is_main_result", json_boolean(main));
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

static int convert_input(struct e2b_result_cell *c, const json_t *content, json_t **out)
{
    c->input_accepted = true;
    json_t *count = json_object_get(content, "execution_count");
    if (!json_is_integer(count))
        return -EINVAL;
    json_t *o = object_of_type("number_of_executions");
    if (!o)
        return -ENOMEM;
    if (set_shared(o, "execution_count", count) < 0) {
        json_decref(o);
        return -ENOMEM;
    }
    *out = o;
    return 0;
}

/* status: busy or idle mark the cell taken and over; a restart ends it
 * with E2B's ContextRestarting error. */
static int convert_status(struct e2b_result_cell *c, const json_t *content, json_t **out)
{
    json_t *state = string_member(content, "execution_state");
    if (!state)
        return -EINVAL;
    const char *s = json_string_value(state);
    if (strcmp(s, "busy") == 0) {
        c->input_accepted = true;
    } else if (strcmp(s, "idle") == 0) {
        if (c->input_accepted)
            c->ended = true;
    } else if (strcmp(s, "restarting") == 0) {
        c->ended = true;
        *out = e2b_result_error("ContextRestarting", "Context was restarted", "");
        return *out ? 0 : -ENOMEM;
    }
    return 0;
}

/* execute_reply: an error E2B has not sent yet (a kernel may report it here
 * alone), or an abort, which ends the cell. */
static int convert_reply(struct e2b_result_cell *c, const json_t *content, json_t **out)
{
    json_t *status = string_member(content, "status");
    if (!status)
        return -EINVAL;
    const char *s = json_string_value(status);
    if (strcmp(s, "error") == 0) {
        if (c->errored)
            return 0;
        int rc = error_from(content, out);
        if (rc == 0)
            c->errored = true;
        return rc;
    }
    if (strcmp(s, "abort") == 0 || strcmp(s, "aborted") == 0) {
        c->ended = true;
        *out = e2b_result_error("ExecutionAborted", "Execution was aborted", "");
        return *out ? 0 : -ENOMEM;
    }
    return 0;
}

int e2b_result_convert(struct e2b_result_cell *c, const char *msg_type, const char *date,
                       const json_t *content, json_t **out)
{
    *out = NULL;
    if (!msg_type || !json_is_object(content))
        return -EINVAL;
    if (strcmp(msg_type, "stream") == 0)
        return convert_stream(date, content, out);
    if (strcmp(msg_type, "execute_result") == 0)
        return convert_result(content, true, out);
    if (strcmp(msg_type, "display_data") == 0)
        return convert_result(content, false, out);
    if (strcmp(msg_type, "execute_input") == 0)
        return convert_input(c, content, out);
    if (strcmp(msg_type, "status") == 0)
        return convert_status(c, content, out);
    if (strcmp(msg_type, "execute_reply") == 0)
        return convert_reply(c, content, out);
    if (strcmp(msg_type, "error") == 0) {
        if (c->errored)
            return 0;
        int rc = error_from(content, out);
        if (rc == 0)
            c->errored = true;
        return rc;
    }
    return 0;
}

int e2b_result_line(const json_t *obj, char **line, size_t *len)
{
    *line = NULL;
    *len = 0;
    if (!obj)
        return -EINVAL;
    char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (!s)
        return -ENOMEM;
    size_t n = strlen(s);
    char *grown = realloc(s, n + 2);
    if (!grown) {
        free(s);
        return -ENOMEM;
    }
    grown[n] = '\n';
    grown[n + 1] = '\0';
    *line = grown;
    *len = n + 1;
    return 0;
}
