/* multipart: a multipart/form-data body's parts (multipart.h).
 *
 * A body is: an optional preamble, then "--boundary", then for each part
 * CRLF, header lines, an empty line and the part's bytes up to the next
 * CRLF "--boundary", and after the last part "--". The part's bytes may
 * hold anything, CRLFs and dashes included; only the full delimiter ends
 * them, found with memmem (linear in glibc). Headers are parsed as lines
 * within a bound; of them only Content-Disposition is read, its parameters
 * as tokens or quoted strings (with backslash escapes, as Go's mime package,
 * envd's, reads them). */
#include "kernel/serve/multipart.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_HEADER_LINES 32

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_tspecial(char c)
{
    return strchr("()<>@,;:\\\"/[]?=", c) != NULL;
}

static bool is_token_char(char c)
{
    return (unsigned char)c > 0x20 && (unsigned char)c < 0x7f && !is_tspecial(c);
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

/* Copies a token or a quoted string at *p into out; 0, or -1 if malformed
 * or longer than outlen - 1. */
static int param_value(const char **p, const char *end, char *out, size_t outlen)
{
    const char *s = *p;
    size_t n = 0;
    if (s < end && *s == '"') {
        for (s++; s < end && *s != '"'; s++) {
            if (*s == '\\' && s + 1 < end)
                s++;
            if ((unsigned char)*s < 0x20 && *s != '\t')
                return -1;
            if (n + 1 >= outlen)
                return -1;
            out[n++] = *s;
        }
        if (s >= end)
            return -1;
        s++;
    } else {
        for (; s < end && is_token_char(*s); s++) {
            if (n + 1 >= outlen)
                return -1;
            out[n++] = *s;
        }
        if (!n)
            return -1;
    }
    out[n] = 0;
    *p = s;
    return 0;
}

/* The next "; name=value" of a header value at *p: 1 with name (lower
 * case) and value, 0 at the end, -1 when malformed. */
static int next_param(const char **p, const char *end, char *name, size_t nlen,
                      char *value, size_t vlen)
{
    const char *s = skip_space(*p, end);
    if (s == end)
        return 0;
    if (*s != ';')
        return -1;
    s = skip_space(s + 1, end);
    if (s == end)
        return 0; /* a trailing ';', which clients send */
    size_t n = 0;
    for (; s < end && is_token_char(*s); s++) {
        if (n + 1 >= nlen)
            return -1;
        name[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
    }
    name[n] = 0;
    s = skip_space(s, end);
    if (!n || s == end || *s != '=')
        return -1;
    s = skip_space(s + 1, end);
    if (param_value(&s, end, value, vlen))
        return -1;
    *p = s;
    return 1;
}

/* Whether [s, end) begins with word, case-insensitively, followed by the end,
 * a space or ';'; *p is moved past it. */
static bool starts_with_type(const char **p, const char *end, const char *word)
{
    const char *s = skip_space(*p, end);
    size_t n = strlen(word);
    if ((size_t)(end - s) < n || strncasecmp(s, word, n) != 0)
        return false;
    s += n;
    if (s < end && !is_space(*s) && *s != ';')
        return false;
    *p = s;
    return true;
}

static bool boundary_valid(const char *b)
{
    size_t n = strlen(b);
    if (n < 1 || n > MULTIPART_MAX_BOUNDARY || b[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        bool alnum =
            (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && !strchr("'()+_,-./:=? ", c))
            return false;
    }
    return true;
}

int multipart_boundary(const char *content_type, char *out, size_t outlen)
{
    const char *p = content_type, *end = content_type + strlen(content_type);
    char name[32], value[MULTIPART_MAX_BOUNDARY + 2];
    bool found = false;
    int rc;
    if (outlen < 2 || !starts_with_type(&p, end, "multipart/form-data"))
        return -EINVAL;
    while ((rc = next_param(&p, end, name, sizeof name, value, sizeof value)) == 1) {
        if (strcmp(name, "boundary") != 0)
            continue;
        if (found || !boundary_valid(value) || strlen(value) >= outlen)
            return -EINVAL;
        memcpy(out, value, strlen(value) + 1);
        found = true;
    }
    return rc == 0 && found ? 0 : -EINVAL;
}

void multipart_init(struct multipart *m, const char *boundary, const char *body,
                    size_t len)
{
    memset(m, 0, sizeof *m);
    m->body = body;
    m->len = len;
    m->dlen = (size_t)snprintf(m->delim, sizeof m->delim, "\r\n--%.*s",
                               MULTIPART_MAX_BOUNDARY, boundary);
}

static int refuse(struct multipart *m, const char *why)
{
    m->error = why;
    m->done = true;
    return -EINVAL;
}

/* Reads Content-Disposition's value [v, end) into p. 0 or -EINVAL. */
static int disposition(struct multipart *m, const char *v, const char *end,
                       struct multipart_part *p, bool *seen_name)
{
    char name[32];
    char value[MULTIPART_MAX_FILENAME + 2];
    int rc;
    if (!starts_with_type(&v, end, "form-data"))
        return refuse(m, "a part is not form-data");
    while ((rc = next_param(&v, end, name, sizeof name, value, sizeof value)) == 1) {
        bool is_name = strcmp(name, "name") == 0, is_file = strcmp(name, "filename") == 0;
        if ((is_name && *seen_name) || (is_file && p->has_filename))
            return refuse(m, "a part's Content-Disposition repeats a parameter");
        if (is_name && strlen(value) > MULTIPART_MAX_NAME)
            return refuse(m, "a part's name is too long");
        if (is_name) {
            memcpy(p->name, value, strlen(value) + 1);
            *seen_name = true;
        } else if (is_file) {
            if (strlen(value) > MULTIPART_MAX_FILENAME)
                return refuse(m, "a part's filename is too long");
            memcpy(p->filename, value, strlen(value) + 1);
            p->has_filename = true;
        }
    }
    return rc == 0 ? 0 : refuse(m, "a part's Content-Disposition is malformed");
}

/* One header line [s, end) of a part (without its CRLF). 0 or -EINVAL. */
static int header_line(struct multipart *m, const char *s, const char *end,
                       struct multipart_part *p, bool *seen_disposition, bool *seen_name)
{
    for (const char *c = s; c < end; c++)
        if ((unsigned char)*c < 0x20 && *c != '\t')
            return refuse(m, "a control character in a part's headers");
    const char *colon = memchr(s, ':', (size_t)(end - s));
    if (!colon || colon == s)
        return refuse(m, "a part's header line is malformed");
    static const char cd[] = "content-disposition";
    if ((size_t)(colon - s) != sizeof cd - 1 || strncasecmp(s, cd, sizeof cd - 1) != 0)
        return 0;
    if (*seen_disposition)
        return refuse(m, "a part has two Content-Disposition headers");
    *seen_disposition = true;
    return disposition(m, colon + 1, end, p, seen_name);
}

/* The header block of a part at m->pos, up to and past its empty line. */
static int headers(struct multipart *m, struct multipart_part *p)
{
    bool seen_disposition = false, seen_name = false;
    size_t start = m->pos;
    for (int lines = 0;; lines++) {
        size_t avail = m->len - m->pos, bound = MULTIPART_MAX_HEADERS - (m->pos - start);
        const char *s = m->body + m->pos;
        const char *crlf = memmem(s, avail < bound ? avail : bound, "\r\n", 2);
        if (!crlf)
            return refuse(m, avail < bound ? "the body ends inside a part's headers"
                                           : "a part's headers are too long");
        m->pos += (size_t)(crlf - s) + 2;
        if (crlf == s)
            break;
        if (lines == MAX_HEADER_LINES)
            return refuse(m, "a part has too many headers");
        if (header_line(m, s, crlf, p, &seen_disposition, &seen_name))
            return -EINVAL;
    }
    if (!seen_disposition || !seen_name)
        return refuse(m, "a part lacks its Content-Disposition name");
    return 0;
}

/* Moves past the first delimiter (the body's start, or after a preamble). */
static int first_delimiter(struct multipart *m)
{
    m->started = true;
    const char *d = m->delim + 2; /* "--" boundary, without the CRLF */
    size_t dl = m->dlen - 2;
    if (m->len >= dl && memcmp(m->body, d, dl) == 0) {
        m->pos = dl;
        return 0;
    }
    const char *found = memmem(m->body, m->len, m->delim, m->dlen);
    if (!found)
        return refuse(m, "the body has no multipart boundary");
    m->pos = (size_t)(found - m->body) + m->dlen;
    return 0;
}

int multipart_next(struct multipart *m, struct multipart_part *p)
{
    if (m->done)
        return m->error ? -EINVAL : 0;
    if (!m->started && first_delimiter(m))
        return -EINVAL;
    /* After a delimiter: "--" closes the body, CRLF opens a part. */
    if (m->len - m->pos >= 2 && memcmp(m->body + m->pos, "--", 2) == 0) {
        m->done = true;
        return 0;
    }
    while (m->pos < m->len && is_space(m->body[m->pos]))
        m->pos++;
    if (m->len - m->pos < 2 || memcmp(m->body + m->pos, "\r\n", 2) != 0)
        return refuse(m, "a multipart boundary is not followed by CRLF");
    m->pos += 2;
    if (++m->parts > MULTIPART_MAX_PARTS)
        return refuse(m, "the body has too many parts");
    memset(p, 0, sizeof *p);
    if (headers(m, p))
        return -EINVAL;
    const char *s = m->body + m->pos;
    const char *found = memmem(s, m->len - m->pos, m->delim, m->dlen);
    if (!found)
        return refuse(m, "the body ends inside a part");
    p->data = s;
    p->len = (size_t)(found - s);
    m->pos += p->len + m->dlen;
    return 1;
}
