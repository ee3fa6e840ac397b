/* dump: jansson dumps the small part; the large strings are escaped here and
 * spliced in as members. A part holds few of them (a display has one value
 * per MIME type), so up to DUMP_MAX_LARGE are taken apart and any beyond are
 * left to jansson. */
#include "protocol/dump.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMP_MAX_LARGE 16

static const char hex[] = "0123456789ABCDEF";

/* What a byte becomes inside a JSON string: 1 (itself), 2 (\x) or 6 (\u00XX). */
static size_t escaped_size(unsigned char c)
{
    if (c >= 0x20 && c != '"' && c != '\\')
        return 1;
    switch (c) {
    case '"':
    case '\\':
    case '\b':
    case '\f':
    case '\n':
    case '\r':
    case '\t':
        return 2;
    default:
        return 6;
    }
}

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* How many bytes from the start of s need no escape: eight at a time while
 * none of them is below 0x20, a quote or a backslash, then one at a time. A
 * word's test is exact as to whether one is there, and as to which is the
 * first (a byte that borrows can flag only the bytes after it): that one's
 * place is the lowest flag's (the words are read little-endian). */
static size_t plain_run(const char *s, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
        uint64_t flags = ((w - ONES * 0x20) & ~w) | ((q - ONES) & ~q) | ((b - ONES) & ~b);
        if (flags & HIGHS) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + ((size_t)__builtin_ctzll(flags & HIGHS) >> 3);
#else
            break;
#endif
        }
    }
    while (i < len && escaped_size((unsigned char)s[i]) == 1)
        i++;
    return i;
}

size_t dump_string_size(const char *s, size_t len)
{
    size_t n = 2, i = 0;
    while (i < len) {
        size_t run = plain_run(s + i, len - i);
        n += run;
        if ((i += run) < len)
            n += escaped_size((unsigned char)s[i++]);
    }
    return n;
}

size_t dump_string(char *out, const char *s, size_t len)
{
    char *o = out;
    *o++ = '"';
    size_t i = 0;
    while (i < len) {
        /* The common case, a run that needs nothing, goes in one copy. */
        size_t run = i + plain_run(s + i, len - i);
        memcpy(o, s + i, run - i);
        o += run - i;
        if ((i = run) >= len)
            break;
        unsigned char c = (unsigned char)s[i++];
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *o++ = (char)c;
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o++ = '"';
    return (size_t)(o - out);
}

struct large {
    const char *parent; /* the member of the part that holds it; NULL: the part */
    const char *key;
    const json_t *value;
};

static char *jansson_text(const json_t *v, size_t *len)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text)
        *len = strlen(text);
    return text;
}

static bool is_large(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) >= DUMP_LARGE_STRING;
}

static size_t find_large(const json_t *part, struct large *out)
{
    size_t n = 0;
    const char *key, *key2;
    const json_t *v, *v2;
    json_object_foreach((json_t *)part, key, v) {
        if (is_large(v) && n < DUMP_MAX_LARGE)
            out[n++] = (struct large){NULL, key, v};
        else if (json_is_object(v))
            json_object_foreach((json_t *)v, key2, v2) {
                if (is_large(v2) && n < DUMP_MAX_LARGE)
                    out[n++] = (struct large){key, key2, v2};
            }
    }
    return n;
}

/* Appends ,"key":<text> (the comma when the object already has a member). */
static char *put_member(char *o, bool *first, const char *key, const char *text,
                        size_t len)
{
    if (!*first)
        *o++ = ',';
    *first = false;
    o += dump_string(o, key, strlen(key));
    *o++ = ':';
    memcpy(o, text, len);
    return o + len;
}

static char *put_large(char *o, bool *first, const struct large *l)
{
    if (!*first)
        *o++ = ',';
    *first = false;
    o += dump_string(o, l->key, strlen(l->key));
    *o++ = ':';
    return o + dump_string(o, json_string_value(l->value), json_string_length(l->value));
}

static size_t large_size(const struct large *l)
{
    return 2 + dump_string_size(l->key, strlen(l->key)) +
           dump_string_size(json_string_value(l->value), json_string_length(l->value));
}

char *dump_part(const json_t *v, size_t *len)
{
    struct large large[DUMP_MAX_LARGE];
    size_t n = json_is_object(v) ? find_large(v, large) : 0;
    if (!n)
        return jansson_text(v, len);
    /* The part without its large strings, and without the members that hold
     * some (each dumped apart, without them). */
    const char *parents[DUMP_MAX_LARGE];
    char *ptext[DUMP_MAX_LARGE] = {0};
    size_t plen[DUMP_MAX_LARGE] = {0}, np = 0;
    char *rest = NULL, *out = NULL;
    size_t rest_len = 0;
    json_t *copy = json_copy((json_t *)v);
    if (!copy)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (!large[i].parent) {
            json_object_del(copy, large[i].key);
            continue;
        }
        size_t p = 0;
        while (p < np && strcmp(parents[p], large[i].parent) != 0)
            p++;
        if (p == np)
            parents[np++] = large[i].parent;
    }
    size_t size = 0;
    for (size_t p = 0; p < np; p++) {
        json_t *inner = json_copy(json_object_get(v, parents[p]));
        for (size_t i = 0; inner && i < n; i++)
            if (large[i].parent && strcmp(large[i].parent, parents[p]) == 0)
                json_object_del(inner, large[i].key);
        ptext[p] = inner ? jansson_text(inner, &plen[p]) : NULL;
        json_decref(inner);
        if (!ptext[p])
            goto done;
        json_object_del(copy, parents[p]);
        size += 2 + dump_string_size(parents[p], strlen(parents[p])) + plen[p];
    }
    if (!(rest = jansson_text(copy, &rest_len)) || rest_len < 2)
        goto done;
    for (size_t i = 0; i < n; i++)
        size += large_size(&large[i]);
    /* From jansson's allocator, as jansson_text's are: a program that gives
     * jansson one for large blocks (the supervisor maps them at once) has it
     * for this one too. Freed with free(), as jansson's texts are. */
    json_malloc_t alloc;
    json_free_t unused;
    json_get_alloc_funcs(&alloc, &unused);
    if (!(out = alloc(rest_len + size + 1)))
        goto done;
    char *o = out;
    memcpy(o, rest, rest_len - 1); /* all but its closing brace */
    o += rest_len - 1;
    bool first = rest_len == 2;
    for (size_t p = 0; p < np; p++) {
        /* "parent":{its small members, then its large strings} */
        o = put_member(o, &first, parents[p], ptext[p], plen[p] - 1);
        bool inner_first = plen[p] == 2;
        for (size_t i = 0; i < n; i++)
            if (large[i].parent && strcmp(large[i].parent, parents[p]) == 0)
                o = put_large(o, &inner_first, &large[i]);
        *o++ = '}';
    }
    for (size_t i = 0; i < n; i++)
        if (!large[i].parent)
            o = put_large(o, &first, &large[i]);
    *o++ = '}';
    *o = 0;
    *len = (size_t)(o - out);
done:
    for (size_t p = 0; p < np; p++)
        free(ptext[p]);
    free(rest);
    json_decref(copy);
    return out;
}
