/* outcome: a cell's iopub messages folded into one record.
 *
 * The kernel is trusted no more here than anywhere: every field is checked
 * for its type before it is used, and a message of the wrong shape adds
 * nothing. Streams are kept whole up to OUTCOME_MAX_STREAM bytes each (what
 * is past that is not kept), since a cell that prints without end
 * must not take the client's memory with it; cutting to --max-chars happens
 * only when the record is printed, so that the note can say how much went. */
#include "kernel/client/outcome.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTCOME_MAX_STREAM (32u << 20) /* bytes of one stream kept in memory */

/* The image types written to files or handed on, and their extensions. */
static const char *const image_types[][2] = {
    {"image/png", "png"},
    {"image/jpeg", "jpg"},
    {"image/gif", "gif"},
    {"image/svg+xml", "svg"},
};
#define NIMAGE_TYPES (sizeof image_types / sizeof image_types[0])

int outcome_init(struct outcome *o)
{
    memset(o, 0, sizeof *o);
    o->outputs = json_array();
    o->files = json_array();
    o->images = json_array();
    o->stdout_text = calloc(1, 1);
    o->stderr_text = calloc(1, 1);
    if (!o->outputs || !o->files || !o->images || !o->stdout_text || !o->stderr_text)
        return -ENOMEM;
    return 0;
}

void outcome_release(struct outcome *o)
{
    json_decref(o->outputs);
    json_decref(o->result);
    json_decref(o->error);
    json_decref(o->files);
    json_decref(o->images);
    free(o->stdout_text);
    free(o->stderr_text);
    memset(o, 0, sizeof *o);
}

static int append_text(char **buf, size_t *len, const char *text, size_t n)
{
    if (*len + n > OUTCOME_MAX_STREAM)
        return -EFBIG;
    char *nb = realloc(*buf, *len + n + 1);
    if (!nb)
        return -ENOMEM;
    memcpy(nb + *len, text, n);
    *len += n;
    nb[*len] = 0;
    *buf = nb;
    return 0;
}

static void add_stream(struct outcome *o, const json_t *content)
{
    const char *name = json_string_value(json_object_get(content, "name"));
    json_t *text = json_object_get(content, "text");
    if (!name || !json_is_string(text))
        return;
    bool out = strcmp(name, "stdout") == 0;
    if (!out && strcmp(name, "stderr") != 0)
        return;
    const char *t = json_string_value(text);
    size_t n = json_string_length(text);
    if (append_text(out ? &o->stdout_text : &o->stderr_text,
                    out ? &o->stdout_len : &o->stderr_len, t, n))
        return;
    /* Consecutive pieces of one stream are one output, as a notebook shows. */
    size_t last = json_array_size(o->outputs);
    json_t *prev = last ? json_array_get(o->outputs, last - 1) : NULL;
    const char *ptype = json_string_value(json_object_get(prev, "type"));
    const char *pname = json_string_value(json_object_get(prev, "name"));
    if (ptype && pname && strcmp(ptype, "stream") == 0 && strcmp(pname, name) == 0) {
        json_t *ptext = json_object_get(prev, "text");
        size_t plen = json_string_length(ptext);
        char *joined = malloc(plen + n + 1);
        if (!joined)
            return;
        memcpy(joined, json_string_value(ptext), plen);
        memcpy(joined + plen, t, n);
        json_string_setn(ptext, joined, plen + n);
        free(joined);
        return;
    }
    json_array_append_new(o->outputs, json_pack("{s:s, s:s, s:s%}", "type", "stream",
                                                "name", name, "text", t, n));
}

static void add_display(struct outcome *o, const char *type, const json_t *content)
{
    json_t *data = json_object_get(content, "data");
    if (!json_is_object(data))
        return;
    json_t *entry = json_pack("{s:s}", "type", type);
    json_t *mimes = json_array(), *files = json_array(), *images = json_array();
    if (!entry || !mimes || !files || !images) {
        json_decref(entry);
        json_decref(mimes);
        json_decref(files);
        json_decref(images);
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach(data, key, value)
        json_array_append_new(mimes, json_string(key));
    json_t *plain = json_object_get(data, "text/plain");
    bool is_result = strcmp(type, "execute_result") == 0;
    if (is_result)
        json_object_set_new(entry, "execution_count",
                            json_integer(json_integer_value(
                                json_object_get(content, "execution_count"))));
    if (json_is_string(plain)) {
        json_object_set(entry, "text", plain);
        if (is_result) {
            json_decref(o->result);
            o->result = json_incref(plain);
        }
    }
    for (size_t i = 0; i < NIMAGE_TYPES; i++) {
        json_t *img = json_object_get(data, image_types[i][0]);
        if (!json_is_string(img))
            continue;
        int index = ++o->nimages;
        if (!o->save_image) {
            json_array_append_new(images,
                                  json_integer((json_int_t)json_array_size(o->images)));
            json_array_append_new(o->images, json_pack("{s:s, s:O}", "mime",
                                                       image_types[i][0], "data", img));
            continue;
        }
        char path[4096];
        if (o->save_image(o->save_arg, o->execution_count, index, image_types[i][0],
                          json_string_value(img), path, sizeof path) == 0) {
            json_array_append_new(files, json_string(path));
            json_array_append_new(o->files, json_string(path));
        }
    }
    json_object_set_new(entry, "mimetypes", mimes);
    json_object_set_new(entry, "files", files);
    if (o->save_image)
        json_decref(images);
    else
        json_object_set_new(entry, "images", images);
    json_array_append_new(o->outputs, entry);
}

static json_t *error_of(const json_t *content)
{
    const char *ename = json_string_value(json_object_get(content, "ename"));
    const char *evalue = json_string_value(json_object_get(content, "evalue"));
    json_t *tb = json_object_get(content, "traceback"), *lines = json_array();
    if (!lines)
        return NULL;
    size_t i;
    json_t *line;
    json_array_foreach(tb, i, line) {
        char *clean =
            json_is_string(line) ? outcome_strip_ansi(json_string_value(line)) : NULL;
        if (clean)
            json_array_append_new(lines, json_string(clean));
        free(clean);
    }
    return json_pack("{s:s, s:s, s:o}", "ename", ename ? ename : "Error", "evalue",
                     evalue ? evalue : "", "traceback", lines);
}

void outcome_add(struct outcome *o, const struct msg *m)
{
    const char *type = msg_type(m);
    const json_t *content = m->content;
    if (strcmp(type, "execute_input") == 0) {
        json_t *n = json_object_get(content, "execution_count");
        if (json_is_integer(n))
            o->execution_count = (int)json_integer_value(n);
    } else if (strcmp(type, "stream") == 0) {
        add_stream(o, content);
    } else if (strcmp(type, "execute_result") == 0 || strcmp(type, "display_data") == 0 ||
               strcmp(type, "update_display_data") == 0) {
        add_display(o, type, content);
    } else if (strcmp(type, "error") == 0) {
        json_t *e = error_of(content);
        if (!e)
            return;
        json_decref(o->error);
        o->error = e;
        json_t *entry = json_pack("{s:s}", "type", "error");
        if (entry && json_object_update(entry, e) == 0)
            json_array_append_new(o->outputs, entry);
        else
            json_decref(entry);
    } else if (strcmp(type, "clear_output") == 0) {
        json_array_append_new(o->outputs, json_pack("{s:s}", "type", "clear_output"));
    }
}

void outcome_finish(struct outcome *o, const struct msg *reply, const char **status)
{
    const json_t *c = reply ? reply->content : NULL;
    const char *s = json_string_value(json_object_get(c, "status"));
    if (!s || (strcmp(s, "ok") != 0 && strcmp(s, "aborted") != 0))
        s = "error";
    *status = strcmp(s, "ok") == 0        ? "ok"
              : strcmp(s, "aborted") == 0 ? "aborted"
                                          : "error";
    json_t *n = json_object_get(c, "execution_count");
    if (json_is_integer(n))
        o->execution_count = (int)json_integer_value(n);
    /* An error reported only in the reply (the kernel's own refusals). */
    if (strcmp(*status, "error") == 0 && !o->error && c)
        o->error = error_of(c);
}

char *outcome_strip_ansi(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1), *w = out;
    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        if (*p != '\x1b') {
            *w++ = *p++;
            continue;
        }
        p++;
        if (*p == '[') { /* CSI: parameters, then a final byte @ to ~ */
            p++;
            while (*p && !(*p >= '@' && *p <= '~'))
                p++;
            if (*p)
                p++;
        } else if (*p == ']') { /* OSC: up to BEL or ESC \ */
            p++;
            while (*p && *p != '\a' && !(p[0] == '\x1b' && p[1] == '\\'))
                p++;
            if (*p == '\a')
                p++;
            else if (*p)
                p += 2;
        } else if (*p && strchr("()*+", *p)) { /* a character set: ESC ( B */
            p++;
            if (*p)
                p++;
        } else if (*p) { /* a two-byte escape */
            p++;
        }
    }
    *w = 0;
    return out;
}

static bool is_lead(unsigned char b)
{
    return (b & 0xC0) != 0x80;
}

char *outcome_cut(const char *text, size_t max_chars)
{
    size_t len = strlen(text), chars = 0;
    for (size_t i = 0; i < len; i++)
        chars += is_lead((unsigned char)text[i]);
    if (max_chars == 0 || chars <= max_chars)
        return strdup(text);
    size_t head = max_chars - max_chars / 2, tail = max_chars / 2;
    size_t hb = 0, seen = 0; /* bytes of the first head characters */
    while (hb < len && (seen < head || !is_lead((unsigned char)text[hb])))
        seen += is_lead((unsigned char)text[hb++]);
    size_t tb = len; /* start of the last tail characters */
    for (size_t got = 0; tb > hb && got < tail;)
        got += is_lead((unsigned char)text[--tb]);
    char note[96];
    int nn = snprintf(note, sizeof note, "\n[... %zu characters cut ...]\n",
                      chars - head - tail);
    char *out = malloc(hb + (size_t)nn + (len - tb) + 1);
    if (!out)
        return NULL;
    memcpy(out, text, hb);
    memcpy(out + hb, note, (size_t)nn);
    memcpy(out + hb + nn, text + tb, len - tb);
    out[hb + (size_t)nn + (len - tb)] = 0;
    return out;
}

char *outcome_traceback_text(const json_t *error)
{
    json_t *tb = json_object_get(error, "traceback");
    size_t total = 1, i;
    json_t *line;
    json_array_foreach(tb, i, line)
        total += json_string_length(line) + 1;
    char *out = malloc(total), *w = out;
    if (!out)
        return NULL;
    json_array_foreach(tb, i, line) {
        size_t n = json_string_length(line);
        memcpy(w, json_string_value(line), n);
        w += n;
        if (n == 0 || w[-1] != '\n')
            *w++ = '\n';
    }
    *w = 0;
    if (w == out) { /* no traceback: "ename: evalue" */
        free(out);
        const char *ename = json_string_value(json_object_get(error, "ename"));
        const char *evalue = json_string_value(json_object_get(error, "evalue"));
        size_t n = strlen(ename ? ename : "") + strlen(evalue ? evalue : "") + 4;
        if (!(out = malloc(n)))
            return NULL;
        snprintf(out, n, "%s: %s\n", ename ? ename : "", evalue ? evalue : "");
    }
    return out;
}

/* A string value cut to max_chars, as a new JSON string. */
static json_t *cut_string(const char *s, size_t max_chars)
{
    char *c = outcome_cut(s, max_chars);
    json_t *v = c ? json_string(c) : NULL;
    free(c);
    return v ? v : json_string("");
}

static void cut_fields(json_t *obj, size_t max_chars)
{
    static const char *const fields[] = {"text", "evalue"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(obj, fields[i]);
        if (json_is_string(v))
            json_object_set_new(obj, fields[i],
                                cut_string(json_string_value(v), max_chars));
    }
    json_t *tb = json_object_get(obj, "traceback");
    size_t i;
    json_t *line;
    json_array_foreach(tb, i, line)
        if (json_is_string(line))
            json_array_set_new(tb, i, cut_string(json_string_value(line), max_chars));
}

json_t *outcome_json(const struct outcome *o, const char *status, size_t max_chars)
{
    json_t *outputs = json_deep_copy(o->outputs);
    json_t *error = o->error ? json_deep_copy(o->error) : json_null();
    if (!outputs || !error) {
        json_decref(outputs);
        json_decref(error);
        return NULL;
    }
    size_t i;
    json_t *entry;
    json_array_foreach(outputs, i, entry)
        cut_fields(entry, max_chars);
    if (o->error)
        cut_fields(error, max_chars);
    json_t *result =
        o->result ? cut_string(json_string_value(o->result), max_chars) : json_null();
    return json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:O}", "status", status,
                     "execution_count", o->execution_count, "stdout",
                     cut_string(o->stdout_text, max_chars), "stderr",
                     cut_string(o->stderr_text, max_chars), "result", result, "error",
                     error, "outputs", outputs, "files", o->files);
}
