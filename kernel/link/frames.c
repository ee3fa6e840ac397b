/* frames: builders and parsers, one pair per kind of frame.
 *
 * The parsers are where the worker's word is checked, so they are strict
 * about shape and bounds and say exactly what was wrong ("reply: content is
 * not an object"), which the supervisor logs when it drops the frame. What
 * they do not check is meaning (whether the request a reply names is the one
 * its shell runs): that needs the supervisor's state, and route.c checks it.
 * A field that a kind may omit can also be null. */
#include "kernel/link/frames.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "protocol/utf8.h"

#define VERSION_MAX 31
#define LAYERS_MAX  16

static const char *const kind_names[LINK_KINDS] = {
    [LINK_REQUEST] = "request",
    [LINK_INTERRUPT] = "interrupt",
    [LINK_SUBSHELL] = "subshell",
    [LINK_INPUT_REPLY] = "input_reply",
    [LINK_HISTORY_REPLY] = "history_reply",
    [LINK_HELLO] = "hello",
    [LINK_IOPUB] = "iopub",
    [LINK_REPLY] = "reply",
    [LINK_INPUT_REQUEST] = "input_request",
    [LINK_HISTORY] = "history",
    [LINK_LOG] = "log",
};

/* What a worker may publish on iopub. */
static const char *const iopub_types[] = {
    "stream",         "display_data", "update_display_data",
    "execute_result", "error",        "clear_output",
    "comm_open",      "comm_msg",     "comm_close",
};

const char *link_kind_name(enum link_kind kind)
{
    return (unsigned)kind < LINK_KINDS ? kind_names[kind] : "?";
}

bool link_kind_from_worker(enum link_kind kind)
{
    return kind >= LINK_HELLO && kind < LINK_KINDS;
}

int link_decode(const char *json, size_t len, enum link_kind *kind, json_t **obj,
                char *err, size_t errlen)
{
    json_error_t jerr;
    *obj = NULL;
    json_t *o = json_loadb(json, len, 0, &jerr);
    if (!o) {
        snprintf(err, errlen, "not JSON (%s)", jerr.text);
        return -EBADMSG;
    }
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!json_is_object(o) || !type) {
        snprintf(err, errlen, "not an object with a \"type\"");
        json_decref(o);
        return -EBADMSG;
    }
    for (int k = 0; k < LINK_KINDS; k++)
        if (strcmp(type, kind_names[k]) == 0) {
            *kind = (enum link_kind)k;
            *obj = o;
            return 0;
        }
    snprintf(err, errlen, "an unknown kind of frame, \"%.40s\"", type);
    json_decref(o);
    return -EBADMSG;
}

char *link_encode_text(const json_t *obj)
{
    return json_dumps(obj, JSON_COMPACT);
}

/* --- checking fields --------------------------------------------------------- */

/* The state of one parse: the first failure is kept, later checks do nothing. */
struct check {
    const json_t *obj;
    enum link_kind kind;
    char *err;
    size_t errlen;
    int rc;
};

static void fail(struct check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(struct check *c, const char *fmt, ...)
{
    if (c->rc)
        return;
    c->rc = -EBADMSG;
    int n = snprintf(c->err, c->errlen, "%s: ", kind_names[c->kind]);
    if (n < 0 || (size_t)n >= c->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static struct check check_start(const json_t *obj, enum link_kind kind, char *err,
                                size_t errlen)
{
    struct check c = {obj, kind, err, errlen, 0};
    const char *type = json_string_value(json_object_get(obj, "type"));
    if (!type || strcmp(type, kind_names[kind]) != 0)
        fail(&c, "the frame is of another kind");
    return c;
}

/* A string field of at most max bytes without NUL; NULL when it may be absent
 * and is (or is null). */
static const char *str(struct check *c, const char *key, bool required, size_t max)
{
    json_t *v = json_object_get(c->obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            fail(c, "no \"%s\"", key);
        return NULL;
    }
    if (!json_is_string(v)) {
        fail(c, "\"%s\" is not a string", key);
        return NULL;
    }
    const char *s = json_string_value(v);
    if (json_string_length(v) > max || strlen(s) != json_string_length(v)) {
        fail(c, "\"%s\" is too long or holds a NUL", key);
        return NULL;
    }
    return s;
}

static json_t *object(struct check *c, const char *key, bool required)
{
    json_t *v = json_object_get(c->obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            fail(c, "no \"%s\"", key);
        return NULL;
    }
    if (!json_is_object(v)) {
        fail(c, "\"%s\" is not an object", key);
        return NULL;
    }
    return v;
}

static bool boolean(struct check *c, const char *key)
{
    json_t *v = json_object_get(c->obj, key);
    if (v && !json_is_boolean(v))
        fail(c, "\"%s\" is not true or false", key);
    return json_is_true(v);
}

/* A number >= 0 (0 when absent). */
static double number(struct check *c, const char *key)
{
    json_t *v = json_object_get(c->obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0) {
        fail(c, "\"%s\" is not a number of at least 0", key);
        return 0;
    }
    return json_number_value(v);
}

/* A whole number in [min, max] (0 when absent). */
static json_int_t integer(struct check *c, const char *key, json_int_t min,
                          json_int_t max)
{
    json_t *v = json_object_get(c->obj, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max) {
        fail(c, "\"%s\" is not a whole number in range", key);
        return 0;
    }
    return json_integer_value(v);
}

static json_t *frame_new(enum link_kind kind)
{
    return json_pack("{s:s}", "type", kind_names[kind]);
}

/* Adds key to a frame being built; a NULL value is left out (for optional
 * fields), a failed allocation makes the frame NULL. */
static json_t *add(json_t *frame, const char *key, json_t *value)
{
    if (!frame || !value) {
        return frame;
    }
    if (json_object_set_new(frame, key, value) != 0) {
        json_decref(frame);
        return NULL;
    }
    return frame;
}

static json_t *add_string(json_t *frame, const char *key, const char *s)
{
    return s ? add(frame, key, json_string(s)) : frame;
}

static json_t *add_object(json_t *frame, const char *key, json_t *o)
{
    return o ? add(frame, key, json_incref(o)) : frame;
}

/* --- supervisor to worker ---------------------------------------------------- */

json_t *link_request_build(const struct link_request *f)
{
    if (!f->shell || !f->msg_type || !f->header || !f->content || !f->metadata)
        return NULL;
    json_t *o = frame_new(LINK_REQUEST);
    o = add_string(o, "shell", f->shell);
    o = add_string(o, "msg_type", f->msg_type);
    o = add_object(o, "header", f->header);
    o = add_object(o, "content", f->content);
    o = add_object(o, "metadata", f->metadata);
    o = add(o, "execution_count", json_integer(f->execution_count));
    o = add(o, "silent", json_boolean(f->silent));
    o = add(o, "store_history", json_boolean(f->store_history));
    o = add(o, "timeout", json_real(f->timeout));
    return add(o, "max_output", json_integer((json_int_t)f->max_output));
}

int link_request_parse(const json_t *obj, struct link_request *out, char *err,
                       size_t errlen)
{
    struct check c = check_start(obj, LINK_REQUEST, err, errlen);
    memset(out, 0, sizeof *out);
    out->shell = str(&c, "shell", true, LINK_ID_MAX);
    out->msg_type = str(&c, "msg_type", true, LINK_ID_MAX);
    out->header = object(&c, "header", true);
    out->content = object(&c, "content", true);
    out->metadata = object(&c, "metadata", true);
    out->execution_count = (int)integer(&c, "execution_count", 0, 1 << 30);
    out->silent = boolean(&c, "silent");
    out->store_history = boolean(&c, "store_history");
    out->timeout = number(&c, "timeout");
    out->max_output = (unsigned long)integer(&c, "max_output", 0, LLONG_MAX);
    return c.rc;
}

json_t *link_interrupt_build(const struct link_interrupt *f)
{
    if (!f->shell || !f->parent)
        return NULL;
    json_t *o = frame_new(LINK_INTERRUPT);
    o = add_string(o, "shell", f->shell);
    o = add_string(o, "parent", f->parent);
    o = add_string(o, "reason", f->timeout ? "timeout" : "interrupt");
    return add(o, "limit", json_real(f->limit));
}

int link_interrupt_parse(const json_t *obj, struct link_interrupt *out, char *err,
                         size_t errlen)
{
    struct check c = check_start(obj, LINK_INTERRUPT, err, errlen);
    memset(out, 0, sizeof *out);
    out->shell = str(&c, "shell", true, LINK_ID_MAX);
    out->parent = str(&c, "parent", true, LINK_ID_MAX);
    const char *reason = str(&c, "reason", true, 16);
    if (reason && strcmp(reason, "timeout") != 0 && strcmp(reason, "interrupt") != 0)
        fail(&c, "\"reason\" is neither timeout nor interrupt");
    out->timeout = reason && strcmp(reason, "timeout") == 0;
    out->limit = number(&c, "limit");
    return c.rc;
}

json_t *link_subshell_build(const struct link_subshell *f)
{
    if (!f->id)
        return NULL;
    json_t *o = frame_new(LINK_SUBSHELL);
    o = add_string(o, "op", f->op == LINK_SUBSHELL_CREATE ? "create" : "delete");
    return add_string(o, "id", f->id);
}

int link_subshell_parse(const json_t *obj, struct link_subshell *out, char *err,
                        size_t errlen)
{
    struct check c = check_start(obj, LINK_SUBSHELL, err, errlen);
    memset(out, 0, sizeof *out);
    const char *op = str(&c, "op", true, 16);
    if (op && strcmp(op, "create") == 0)
        out->op = LINK_SUBSHELL_CREATE;
    else if (op && strcmp(op, "delete") == 0)
        out->op = LINK_SUBSHELL_DELETE;
    else if (op)
        fail(&c, "\"op\" is neither create nor delete");
    out->id = str(&c, "id", true, LINK_ID_MAX);
    return c.rc;
}

json_t *link_input_reply_build(const struct link_input_reply *f)
{
    if (!f->parent || !f->content)
        return NULL;
    json_t *o = frame_new(LINK_INPUT_REPLY);
    o = add_string(o, "parent", f->parent);
    return add_object(o, "content", f->content);
}

int link_input_reply_parse(const json_t *obj, struct link_input_reply *out, char *err,
                           size_t errlen)
{
    struct check c = check_start(obj, LINK_INPUT_REPLY, err, errlen);
    memset(out, 0, sizeof *out);
    out->parent = str(&c, "parent", true, LINK_ID_MAX);
    out->content = object(&c, "content", true);
    return c.rc;
}

/* --- worker to supervisor ---------------------------------------------------- */

json_t *link_hello_build(const struct link_hello *f)
{
    if (!f->python_version || !f->sandbox)
        return NULL;
    json_t *o = frame_new(LINK_HELLO);
    o = add_string(o, "python_version", f->python_version);
    o = add(o, "pid", json_integer(f->pid));
    return add_object(o, "sandbox", f->sandbox);
}

int link_hello_parse(const json_t *obj, struct link_hello *out, char *err, size_t errlen)
{
    struct check c = check_start(obj, LINK_HELLO, err, errlen);
    memset(out, 0, sizeof *out);
    out->python_version = str(&c, "python_version", true, VERSION_MAX);
    out->pid = (long)integer(&c, "pid", 0, 1 << 30);
    json_t *layers = json_object_get(obj, "sandbox");
    if (!json_is_array(layers) || json_array_size(layers) > LAYERS_MAX) {
        fail(&c, "\"sandbox\" is not a list of at most %d layers", LAYERS_MAX);
    } else {
        size_t i;
        json_t *layer;
        json_array_foreach(layers, i, layer) {
            struct check lc = {layer, LINK_HELLO, err, errlen, 0};
            if (!json_is_object(layer)) {
                fail(&c, "a sandbox layer is not an object");
                break;
            }
            str(&lc, "name", true, 64);
            str(&lc, "state", true, 32);
            str(&lc, "detail", true, 1024);
            if (lc.rc) {
                c.rc = lc.rc; /* lc wrote the sentence */
                break;
            }
        }
        out->sandbox = layers;
    }
    return c.rc;
}

json_t *link_iopub_build(const struct link_iopub *f)
{
    if (!f->msg_type || !f->content)
        return NULL;
    json_t *o = frame_new(LINK_IOPUB);
    o = add_string(o, "msg_type", f->msg_type);
    o = add_object(o, "content", f->content);
    o = add_string(o, "parent", f->parent);
    return add_object(o, "metadata", f->metadata);
}

int link_iopub_parse(const json_t *obj, struct link_iopub *out, char *err, size_t errlen)
{
    struct check c = check_start(obj, LINK_IOPUB, err, errlen);
    memset(out, 0, sizeof *out);
    out->msg_type = str(&c, "msg_type", true, LINK_ID_MAX);
    bool known = false;
    for (size_t i = 0; out->msg_type && i < sizeof iopub_types / sizeof iopub_types[0];
         i++)
        known |= strcmp(out->msg_type, iopub_types[i]) == 0;
    if (out->msg_type && !known)
        fail(&c, "\"%.40s\" is not a message a worker may publish", out->msg_type);
    out->parent = str(&c, "parent", false, LINK_ID_MAX);
    out->content = object(&c, "content", true);
    out->metadata = object(&c, "metadata", false);
    json_t *raw = json_object_get(obj, "raw");
    if (raw && !json_is_null(raw)) {
        if (!json_is_array(raw) || json_array_size(raw) > LINK_MAX_RAW)
            fail(&c, "\"raw\" is not an array of at most %d paths", LINK_MAX_RAW);
        size_t i;
        json_t *path;
        json_array_foreach(raw, i, path) {
            size_t n = json_array_size(path), j;
            json_t *key;
            if (!json_is_array(path) || n < 1 || n > 2)
                fail(&c, "a path of \"raw\" is not one or two keys");
            json_array_foreach(path, j, key) {
                if (!json_is_string(key) || json_string_length(key) > LINK_ID_MAX ||
                    strlen(json_string_value(key)) != json_string_length(key))
                    fail(&c, "a key of \"raw\" is not a short string without NUL");
            }
        }
        out->raw = raw;
    }
    return c.rc;
}

/* Whether s[0, len) is UTF-8 as JSON text may hold it (protocol/utf8.h) and,
 * as the JSON the supervisor reads, holds no NUL. */
static bool text_ok(const unsigned char *s, size_t len)
{
    return !memchr(s, 0, len) && utf8_valid((const char *)s, len);
}

int link_iopub_take_raw(struct link_iopub *f, const struct wire_frame *buffers,
                        size_t nbuffers, size_t *left, char *err, size_t errlen)
{
    size_t n = json_array_size(f->raw);
    *left = nbuffers;
    if (n > nbuffers) {
        snprintf(err, errlen, "iopub: %zu raw texts named and %zu buffers", n, nbuffers);
        return -EBADMSG;
    }
    for (size_t i = 0; i < n; i++) {
        const struct wire_frame *b = &buffers[nbuffers - n + i];
        json_t *path = json_array_get(f->raw, i);
        const char *k1 = json_string_value(json_array_get(path, 0));
        const char *k2 = json_string_value(json_array_get(path, 1));
        json_t *into = f->content;
        if (k2) {
            into = json_object_get(f->content, k1);
            if (!into) {
                into = json_object();
                if (!into || json_object_set_new(f->content, k1, into) != 0)
                    return -ENOMEM;
            }
            if (!json_is_object(into)) {
                snprintf(err, errlen, "iopub: raw text for \"%s\", not an object", k1);
                return -EBADMSG;
            }
        }
        const char *key = k2 ? k2 : k1;
        if (json_object_get(into, key)) {
            snprintf(err, errlen, "iopub: raw text for \"%s\", which is there already",
                     key);
            return -EBADMSG;
        }
        if (!text_ok((const unsigned char *)b->data, b->len)) {
            snprintf(err, errlen,
                     "iopub: raw text for \"%s\" that is not UTF-8 or holds a NUL", key);
            return -EBADMSG;
        }
        json_t *v = json_stringn_nocheck(b->data, b->len);
        if (!v || json_object_set_new(into, key, v) != 0)
            return -ENOMEM;
    }
    *left = nbuffers - n;
    return 0;
}

json_t *link_reply_build(const struct link_reply *f)
{
    if (!f->shell || !f->parent || !f->content)
        return NULL;
    json_t *o = frame_new(LINK_REPLY);
    o = add_string(o, "shell", f->shell);
    o = add_string(o, "parent", f->parent);
    o = add_object(o, "content", f->content);
    return add_object(o, "metadata", f->metadata);
}

int link_reply_parse(const json_t *obj, struct link_reply *out, char *err, size_t errlen)
{
    struct check c = check_start(obj, LINK_REPLY, err, errlen);
    memset(out, 0, sizeof *out);
    out->shell = str(&c, "shell", true, LINK_ID_MAX);
    /* A reply names the request it answers: without it, a forged reply would end
     * whatever its shell runs, and shift the real answers onto later requests. */
    out->parent = str(&c, "parent", true, LINK_ID_MAX);
    out->content = object(&c, "content", true);
    out->metadata = object(&c, "metadata", false);
    return c.rc;
}

json_t *link_input_request_build(const struct link_input_request *f)
{
    if (!f->content)
        return NULL;
    json_t *o = frame_new(LINK_INPUT_REQUEST);
    o = add_string(o, "parent", f->parent);
    return add_object(o, "content", f->content);
}

int link_input_request_parse(const json_t *obj, struct link_input_request *out, char *err,
                             size_t errlen)
{
    struct check c = check_start(obj, LINK_INPUT_REQUEST, err, errlen);
    memset(out, 0, sizeof *out);
    out->parent = str(&c, "parent", false, LINK_ID_MAX);
    out->content = object(&c, "content", true);
    return c.rc;
}

json_t *link_history_build(const struct link_history *f)
{
    if (!f->query)
        return NULL;
    json_t *o = frame_new(LINK_HISTORY);
    o = add(o, "id", json_integer(f->id));
    return add_object(o, "query", f->query);
}

int link_history_parse(const json_t *obj, struct link_history *out, char *err,
                       size_t errlen)
{
    struct check c = check_start(obj, LINK_HISTORY, err, errlen);
    memset(out, 0, sizeof *out);
    if (!json_object_get(obj, "id"))
        fail(&c, "no \"id\"");
    out->id = integer(&c, "id", 0, LINK_HISTORY_ID_MAX);
    out->query = object(&c, "query", true);
    return c.rc;
}

json_t *link_history_reply_build(const struct link_history_reply *f)
{
    if (!f->history == !f->error)
        return NULL;
    json_t *o = frame_new(LINK_HISTORY_REPLY);
    o = add(o, "id", json_integer(f->id));
    o = add_object(o, "history", f->history);
    if (f->session > 0)
        o = add(o, "session", json_integer(f->session));
    return add_string(o, "error", f->error);
}

int link_history_reply_parse(const json_t *obj, struct link_history_reply *out, char *err,
                             size_t errlen)
{
    struct check c = check_start(obj, LINK_HISTORY_REPLY, err, errlen);
    memset(out, 0, sizeof *out);
    if (!json_object_get(obj, "id"))
        fail(&c, "no \"id\"");
    out->id = integer(&c, "id", 0, LINK_HISTORY_ID_MAX);
    out->error = str(&c, "error", false, LINK_ERROR_MAX);
    out->session = integer(&c, "session", 0, LLONG_MAX);
    json_t *h = json_object_get(obj, "history");
    if (h && !json_is_null(h) && !json_is_array(h))
        fail(&c, "\"history\" is not a list");
    out->history = json_is_array(h) ? h : NULL;
    if (!out->history == !out->error)
        fail(&c, "neither \"history\" nor \"error\", or both");
    return c.rc;
}

json_t *link_log_build(const struct link_log *f)
{
    if (!f->text)
        return NULL;
    return add_string(frame_new(LINK_LOG), "text", f->text);
}

int link_log_parse(const json_t *obj, struct link_log *out, char *err, size_t errlen)
{
    struct check c = check_start(obj, LINK_LOG, err, errlen);
    memset(out, 0, sizeof *out);
    out->text = str(&c, "text", true, LINK_LOG_MAX);
    return c.rc;
}
