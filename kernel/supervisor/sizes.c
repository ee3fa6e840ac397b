/* sizes: the bytes a message holds, and which of them are images.
 *
 * The caps count every byte of every message a cell causes: its content (data,
 * metadata, transient, a traceback, a comm's state), its metadata and its
 * buffers. Images have a budget of their own so that a text cap keeps charts,
 * and which bytes are images is read from the bytes: a made-up image/x-text
 * type holding text is text, and so is an image/png that is not a PNG. */
#include "kernel/supervisor/sizes.h"

#include <stdio.h>
#include <string.h>

#include "kernel/util/base64.h"

size_t sizes_json(const json_t *v)
{
    if (!v)
        return 0;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_length(v) + 2;
    case JSON_OBJECT: {
        size_t n = 1; /* the braces, and the commas between members */
        const char *key;
        json_t *m;
        json_object_foreach((json_t *)v, key, m)
            n += strlen(key) + 4 + sizes_json(m); /* ,"key": */
        return json_object_size(v) ? n : 2;
    }
    case JSON_ARRAY: {
        size_t n = 1, i;
        json_t *m;
        json_array_foreach(v, i, m)
            n += 1 + sizes_json(m);
        return json_array_size(v) ? n : 2;
    }
    case JSON_INTEGER:
    case JSON_REAL: {
        char buf[64];
        int len = json_is_integer(v)
                      ? snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(v))
                      : snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        return len > 0 ? (size_t)len : 1;
    }
    case JSON_TRUE:
    case JSON_NULL:
        return 4;
    case JSON_FALSE:
        return 5;
    }
    return 0;
}

static bool starts(const unsigned char *b, size_t n, const char *sig, size_t len)
{
    return n >= len && memcmp(b, sig, len) == 0;
}

/* What precedes an SVG's root element: space, the XML declaration, processing
 * instructions, comments and the doctype. Returns where the root begins. */
static const char *svg_prolog(const char *p, const char *end)
{
    while (p < end) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') {
            p++;
            continue;
        }
        const char *close = NULL;
        if (end - p >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
            close = p + 3; /* a byte order mark */
        else if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            const char *q = p + 4;
            while (end - q >= 3 && memcmp(q, "-->", 3) != 0)
                q++;
            close = end - q >= 3 ? q + 3 : NULL;
        } else if (end - p >= 2 && (memcmp(p, "<?", 2) == 0 || memcmp(p, "<!", 2) == 0)) {
            const char *q = memchr(p, '>', (size_t)(end - p));
            close = q ? q + 1 : NULL;
        }
        if (!close)
            return p;
        p = close;
    }
    return p;
}

bool sizes_is_image(const char *mime, const json_t *v)
{
    if (!json_is_string(v) || strncmp(mime, "image/", 6) != 0)
        return false;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (strcmp(mime, "image/svg+xml") == 0) {
        const char *root = svg_prolog(s, s + len);
        size_t left = (size_t)(s + len - root);
        return left >= 5 && memcmp(root, "<svg", 4) == 0 &&
               (root[4] == ' ' || root[4] == '>' || root[4] == '/' || root[4] == '\n' ||
                root[4] == '\r' || root[4] == '\t');
    }
    unsigned char b[12];
    size_t n = base64_decode_head(s, len, b, sizeof b);
    if (strcmp(mime, "image/png") == 0)
        return starts(b, n, "\x89PNG\r\n\x1a\n", 8);
    if (strcmp(mime, "image/jpeg") == 0)
        return starts(b, n, "\xff\xd8\xff", 3);
    if (strcmp(mime, "image/gif") == 0)
        return starts(b, n, "GIF87a", 6) || starts(b, n, "GIF89a", 6);
    if (strcmp(mime, "image/webp") == 0)
        return starts(b, n, "RIFF", 4) && n >= 12 && memcmp(b + 8, "WEBP", 4) == 0;
    if (strcmp(mime, "image/bmp") == 0)
        return starts(b, n, "BM", 2);
    return false;
}

size_t sizes_images(const json_t *content)
{
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(content, "data"), key, v) {
        if (sizes_is_image(key, v))
            n += json_string_length(v);
    }
    return n;
}
