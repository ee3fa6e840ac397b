/* load: the large strings of a part are found and decoded here; jansson
 * parses the rest, with a marker in each one's place, and the markers are then
 * replaced by the decoded strings.
 *
 * What is hard here: refusing what jansson refuses. A string's end is the first
 * quote not escaped, as for jansson, so the text around the large strings is
 * what jansson would have read. Their contents are checked as jansson checks
 * them. The markers are strings holding a NUL, which the skeleton is parsed to
 * allow, so each NUL-holding string must be exactly one marker, each marker
 * found at most once: any other is a \u0000 of the sender's, refused as jansson
 * would refuse it. A large string that is a key is left to jansson. */
#include "protocol/load.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/utf8.h"

#define LOAD_MAX_LARGE 16
#define MARK           "\\u0000sandpit-large:" /* in the skeleton's text */
#define MARK_VALUE     "\0sandpit-large:"      /* what jansson makes of it */
#define MARK_VALUE_LEN (sizeof MARK_VALUE - 1)

struct large {
    size_t start,
        end;     /* the string's contents in the text: after and before its quotes */
    char *value; /* decoded */
    size_t len;
    bool found;
};

static void fail(json_error_t *err, const char *what)
{
    if (err) {
        memset(err, 0, sizeof *err);
        snprintf(err->text, sizeof err->text, "%s", what);
    }
}

/* The end of the string whose contents start at i: the index of its closing
 * quote, or len when there is none. */
static size_t string_end(const char *t, size_t len, size_t i)
{
    for (;;) {
        const char *q = memchr(t + i, '"', len - i);
        if (!q)
            return len;
        size_t at = (size_t)(q - t), k = at;
        while (k > i && t[k - 1] == '\\')
            k--;
        if ((at - k) % 2 == 0)
            return at;
        i = at + 1;
    }
}

/* The strings of min bytes and more that are values, in order: how many (at
 * most LOAD_MAX_LARGE). */
static size_t find_large(const char *t, size_t len, size_t min, struct large *l)
{
    size_t n = 0, i = 0;
    while (n < LOAD_MAX_LARGE) {
        const char *q = i < len ? memchr(t + i, '"', len - i) : NULL;
        if (!q)
            break;
        size_t start = (size_t)(q - t) + 1, end = string_end(t, len, start);
        if (end >= len)
            break;
        i = end + 1;
        size_t k = i;
        while (k < len && (t[k] == ' ' || t[k] == '\t' || t[k] == '\n' || t[k] == '\r'))
            k++;
        if (end - start >= min && (k >= len || t[k] != ':'))
            l[n++] = (struct large){start, end, NULL, 0, false};
    }
    return n;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The end of the run of plain ASCII bytes from i (none below 0x20, none a
 * backslash, none of 0x80 and above), looked at eight bytes at a time. */
static size_t plain_run(const unsigned char *u, size_t i, size_t len)
{
    size_t run = i;
    for (; run + 8 <= len; run += 8) {
        uint64_t x;
        memcpy(&x, u + run, 8);
        uint64_t b = x ^ 0x5C5C5C5C5C5C5C5CULL;
        uint64_t flags =
            ((x - 0x2020202020202020ULL) & ~x) | ((b - 0x0101010101010101ULL) & ~b) | x;
        if (flags & 0x8080808080808080ULL)
            break;
    }
    while (run < len && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '\\')
        run++;
    return run;
}

/* Decodes the escape at s[*i] (a backslash) into *w, both moved past it: 0, or -1
 * with *why set when jansson would refuse it. */
static int decode_escape(const char *s, size_t len, size_t *i, char **w, const char **why)
{
    if (*i + 1 >= len) {
        *why = "invalid escape";
        return -1;
    }
    char e = s[*i + 1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
        static const char to[] = "\"\\/\b\f\n\r\t";
        *(*w)++ = to[simple - "\"\\/bfnrt"];
        *i += 2;
        return 0;
    }
    int cp = e == 'u' && *i + 6 <= len ? hex4(s + *i + 2) : -1;
    if (cp < 0) {
        *why = "invalid escape";
        return -1;
    }
    *i += 6;
    uint32_t code = (uint32_t)cp;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
        *why = "invalid Unicode escape: a lone low surrogate";
        return -1;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        size_t at = *i;
        int lo =
            at + 6 <= len && s[at] == '\\' && s[at + 1] == 'u' ? hex4(s + at + 2) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF) {
            *why = "invalid Unicode escape: a lone high surrogate";
            return -1;
        }
        code = 0x10000 + (((uint32_t)cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
        *i += 6;
    }
    if (code == 0) {
        *why = "\\u0000 is not allowed";
        return -1;
    }
    *w += put_utf8(*w, code);
    return 0;
}

/* Decodes the contents s[0, len) of a JSON string into a new buffer: 0, or -1
 * with *why set when jansson would refuse it. */
static int decode(const char *s, size_t len, char **out, size_t *out_len,
                  const char **why)
{
    char *o = malloc(len + 1), *w = o;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    if (!o) {
        *why = "out of memory";
        return -1;
    }
    while (i < len) {
        size_t run = plain_run(u, i, len);
        memcpy(w, s + i, run - i);
        w += run - i;
        if ((i = run) >= len)
            break;
        unsigned char c = u[i];
        if (c >= 0x80) {
            int n = utf8_seq(u + i, len - i);
            if (n <= 0) {
                *why = "invalid UTF-8 in a string";
                goto bad;
            }
            memcpy(w, s + i, (size_t)n);
            w += n;
            i += (size_t)n;
            continue;
        }
        if (c < 0x20) {
            *why = "control character in a string";
            goto bad;
        }
        if (decode_escape(s, len, &i, &w, why) < 0)
            goto bad;
    }
    *w = 0;
    *out = o;
    *out_len = (size_t)(w - o);
    return 0;
bad:
    free(o);
    return -1;
}

/* Puts each decoded string in its marker's place: 0, or -1 with *why set. */
static int replace(json_t *v, struct large *l, size_t n, const char **why)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *member;
        json_object_foreach(v, key, member) {
            if (replace(member, l, n, why))
                return -1;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (replace(json_array_get(v, i), l, n, why))
                return -1;
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (strlen(s) == len)
            return 0;
        size_t k = 0, digits = 0;
        if (len > MARK_VALUE_LEN && memcmp(s, MARK_VALUE, MARK_VALUE_LEN) == 0)
            for (size_t i = MARK_VALUE_LEN; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
                k = k * 10 + (size_t)(s[i] - '0');
                if (++digits > 2)
                    break;
            }
        if (!digits || digits > 2 || MARK_VALUE_LEN + digits != len || k >= n ||
            l[k].found) {
            *why = "\\u0000 is not allowed";
            return -1;
        }
        l[k].found = true;
        if (json_string_setn_nocheck(v, l[k].value, l[k].len)) {
            *why = "out of memory";
            return -1;
        }
    }
    return 0;
}

json_t *load_part(const char *text, size_t len, json_error_t *err)
{
    return load_part_from(text, len, LOAD_LARGE, err);
}

json_t *load_part_from(const char *text, size_t len, size_t min, json_error_t *err)
{
    struct large l[LOAD_MAX_LARGE];
    size_t n = len >= min ? find_large(text, len, min ? min : 1, l) : 0;
    if (!n)
        return json_loadb(text, len, 0, err);
    const char *why = NULL;
    json_t *v = NULL;
    char *skel = NULL;
    size_t done = 0;
    for (; done < n; done++)
        if (decode(text + l[done].start, l[done].end - l[done].start, &l[done].value,
                   &l[done].len, &why))
            goto out;
    size_t size = len + n * (sizeof MARK + 2);
    if (!(skel = malloc(size))) {
        why = "out of memory";
        goto out;
    }
    size_t o = 0, from = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(skel + o, text + from, l[i].start - from);
        o += l[i].start - from;
        o += (size_t)snprintf(skel + o, size - o, MARK "%zu", i);
        from = l[i].end;
    }
    memcpy(skel + o, text + from, len - from);
    o += len - from;
    if (!(v = json_loadb(skel, o, JSON_ALLOW_NUL, err)))
        goto out; /* jansson's own reason */
    /* A marker may be missing: its member was given again later in its object,
     * and jansson keeps the last. */
    if (replace(v, l, n, &why)) {
        json_decref(v);
        v = NULL;
    }
out:
    if (!v && why)
        fail(err, why);
    for (size_t i = 0; i < done; i++)
        free(l[i].value);
    free(skel);
    return v;
}
