/* msg: parse, build and serialise Jupyter messages.
 *
 * The parser is the kernel's front door. Everything it reads comes from the
 * network, so it checks types rather than trusting them: a header must be an
 * object with a string msg_type and msg_id; the other three parts must be
 * objects. It verifies the signature before parsing any JSON, so an unsigned
 * message costs one HMAC and nothing else, and counts the nesting of each part
 * before parsing it, so a deep one costs one pass over its bytes.
 *
 * The header is read first and on its own: once it is, the sender can be
 * answered even if the rest is unreadable, and a client waiting for a reply to a
 * well-signed request always gets one. */
#include "protocol/msg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "protocol/dump.h"
#include "protocol/errbuf.h"
#include "protocol/load.h"

int msg_session_init(struct msg_session *s, const char *username)
{
    unsigned char r[16];
    memset(s, 0, sizeof *s);
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -errno;
    r[6] = (r[6] & 0x0f) | 0x40;
    r[8] = (r[8] & 0x3f) | 0x80;
    snprintf(s->session, sizeof s->session,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
             r[13], r[14], r[15]);
    snprintf(s->username, sizeof s->username, "%s",
             username && *username ? username : "kernel");
    s->pid = (long)getpid();
    return 0;
}

void msg_free(struct msg *m)
{
    if (!m)
        return;
    wire_frames_free(m->idents, m->nidents);
    wire_frames_free(m->buffers, m->nbuffers);
    json_decref(m->header);
    json_decref(m->parent_header);
    json_decref(m->metadata);
    json_decref(m->content);
    free(m);
}

static int append_frame(struct wire_frame **arr, size_t *n, const void *data, size_t len)
{
    struct wire_frame *na = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!na)
        return -ENOMEM;
    *arr = na;
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    if (len)
        memcpy(copy, data, len);
    na[*n].data = copy;
    na[*n].len = len;
    (*n)++;
    return 0;
}

int msg_add_ident(struct msg *m, const void *data, size_t len)
{
    return append_frame(&m->idents, &m->nidents, data, len);
}

int msg_add_buffer(struct msg *m, const void *data, size_t len)
{
    return append_frame(&m->buffers, &m->nbuffers, data, len);
}

static const char *const part_names[WIRE_NPARTS] = {"header", "parent_header", "metadata",
                                                    "content"};

/* The deepest nesting of arrays and objects in a JSON text, counted over its bytes
 * without parsing it (brackets inside strings do not count); stops at limit + 1. */
static size_t json_depth(const char *p, size_t n, size_t limit)
{
    size_t depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < n && deepest <= limit; i++) {
        char c = p[i];
        if (in_string) {
            /* To the closing quote at once: the first quote after an even run of
             * backslashes (a long output is one long string). */
            const char *q = memchr(p + i, '"', n - i);
            if (!q)
                break;
            size_t at = (size_t)(q - p), k = at;
            while (k > i && p[k - 1] == '\\')
                k--;
            i = at;
            in_string = (at - k) % 2 == 1;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return deepest;
}

/* Parses one part into *slot: 0, or -EBADMSG with the reason in err. */
static int parse_part(const struct wire_frame *f, int i, json_t **slot, unsigned flags,
                      char *err, size_t errlen)
{
    if (json_depth(f->data, f->len, MSG_MAX_DEPTH) > MSG_MAX_DEPTH)
        return errbuf_set(-EBADMSG, err, errlen, "%s nests deeper than %d levels",
                          part_names[i], MSG_MAX_DEPTH);
    json_error_t jerr;
    *slot = flags & MSG_PARSE_LARGE ? load_part(f->data, f->len, &jerr)
                                    : json_loadb(f->data, f->len, 0, &jerr);
    if (!*slot)
        return errbuf_set(-EBADMSG, err, errlen, "%s is not valid JSON: %s",
                          part_names[i], jerr.text);
    if (!json_is_object(*slot))
        return errbuf_set(-EBADMSG, err, errlen, "%s is not a JSON object",
                          part_names[i]);
    return 0;
}

int msg_parse(const struct wire_frame *frames, size_t n, struct sign *s, struct msg **out,
              char *err, size_t errlen)
{
    return msg_parse_with(frames, n, s, 0, out, err, errlen);
}

int msg_parse_with(const struct wire_frame *frames, size_t n, struct sign *s,
                   unsigned flags, struct msg **out, char *err, size_t errlen)
{
    *out = NULL;
    struct wire_parts p;
    int rc = wire_split(frames, n, &p, err, errlen);
    if (rc)
        return rc;
    struct sign_part sp[WIRE_NPARTS];
    for (int i = 0; i < WIRE_NPARTS; i++) {
        sp[i].data = p.json[i]->data;
        sp[i].len = p.json[i]->len;
    }
    rc = sign_accept(s, sp, p.signature->data, p.signature->len);
    if (rc == -EALREADY)
        return errbuf_set(rc, err, errlen,
                          "a signature seen before: the message is a replay");
    if (rc == -ENOMEM)
        return rc;
    if (rc)
        return errbuf_set(-EACCES, err, errlen,
                          p.signature->len ? "bad signature" : "missing signature");

    struct msg *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    if ((rc = parse_part(p.json[WIRE_HEADER], WIRE_HEADER, &m->header, 0, err, errlen)))
        goto fail;
    json_t *type = json_object_get(m->header, "msg_type");
    if (!json_is_string(type) || json_string_length(type) == 0) {
        rc = errbuf_set(-EBADMSG, err, errlen, "header has no msg_type string");
        goto fail;
    }
    if (!json_is_string(json_object_get(m->header, "msg_id"))) {
        rc = errbuf_set(-EBADMSG, err, errlen, "header has no msg_id string");
        goto fail;
    }
    for (size_t i = 0; i < p.nidents; i++)
        if ((rc = msg_add_ident(m, p.idents[i].data, p.idents[i].len)))
            goto fail;
    json_t **slots[WIRE_NPARTS] = {&m->header, &m->parent_header, &m->metadata,
                                   &m->content};
    for (int i = WIRE_PARENT; i < WIRE_NPARTS; i++) {
        if (parse_part(p.json[i], i, slots[i], flags, err, errlen) == 0)
            continue;
        /* The sender can be told: a message with its header, and nothing else. */
        for (int j = WIRE_PARENT; j < WIRE_NPARTS; j++) {
            json_decref(*slots[j]);
            if (!(*slots[j] = json_object())) {
                rc = -ENOMEM;
                goto fail;
            }
        }
        *out = m;
        return -EPROTO;
    }
    for (size_t i = 0; i < p.nbuffers; i++)
        if ((rc = msg_add_buffer(m, p.buffers[i].data, p.buffers[i].len)))
            goto fail;
    *out = m;
    return 0;
fail:
    msg_free(m);
    return rc;
}

static const char *header_string(const struct msg *m, const char *key)
{
    const char *v =
        m && m->header ? json_string_value(json_object_get(m->header, key)) : NULL;
    return v ? v : "";
}

const char *msg_type(const struct msg *m)
{
    return header_string(m, "msg_type");
}

const char *msg_id(const struct msg *m)
{
    return header_string(m, "msg_id");
}

void msg_date_now(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             ts.tv_nsec / 1000);
}

struct msg *msg_make(struct msg_session *s, const char *type, const struct msg *parent,
                     json_t **content, bool route)
{
    json_t *c = content && *content ? *content : json_object();
    if (content)
        *content = NULL;
    struct msg *m = calloc(1, sizeof *m);
    if (!m || !c)
        goto fail;
    m->content = c;
    c = NULL;
    char id[96], date[40];
    snprintf(id, sizeof id, "%s_%ld_%llu", s->session, s->pid, ++s->counter);
    msg_date_now(date, sizeof date);
    m->header = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session",
                          s->session, "username", s->username, "date", date, "msg_type",
                          type, "version", MSG_PROTOCOL_VERSION);
    m->parent_header = parent ? json_incref(parent->header) : json_object();
    m->metadata = json_object();
    if (!m->header || !m->parent_header || !m->metadata)
        goto fail;
    if (route && parent)
        for (size_t i = 0; i < parent->nidents; i++)
            if (msg_add_ident(m, parent->idents[i].data, parent->idents[i].len))
                goto fail;
    return m;
fail:
    json_decref(c);
    msg_free(m);
    return NULL;
}

int msg_serialize(const struct msg *m, const struct sign *s, struct wire_frame **frames,
                  size_t *n)
{
    size_t total = m->nidents + 2 + WIRE_NPARTS + m->nbuffers;
    struct wire_frame *f = calloc(total, sizeof *f);
    *frames = NULL;
    *n = 0;
    if (!f)
        return -ENOMEM;
    size_t k = 0;
    int rc = -ENOMEM;
    for (size_t i = 0; i < m->nidents; i++, k++) {
        f[k].len = m->idents[i].len;
        if (!(f[k].data = malloc(f[k].len ? f[k].len : 1)))
            goto fail;
        memcpy(f[k].data, m->idents[i].data, f[k].len);
    }
    if (!(f[k].data = strdup(WIRE_DELIM)))
        goto fail;
    f[k++].len = WIRE_DELIM_LEN;
    size_t sig = k++;
    const json_t *parts[WIRE_NPARTS] = {m->header, m->parent_header, m->metadata,
                                        m->content};
    struct sign_part sp[WIRE_NPARTS];
    for (int i = 0; i < WIRE_NPARTS; i++, k++) {
        size_t len = 0;
        char *text = dump_part(parts[i], &len);
        if (!text)
            goto fail;
        f[k].data = text;
        f[k].len = len;
        sp[i].data = text;
        sp[i].len = f[k].len;
    }
    if (!(f[sig].data = malloc(SIGN_HEX_LEN + 1)))
        goto fail;
    if ((rc = sign_compute(s, sp, f[sig].data)))
        goto fail;
    f[sig].len = strlen(f[sig].data);
    rc = -ENOMEM;
    for (size_t i = 0; i < m->nbuffers; i++, k++) {
        f[k].len = m->buffers[i].len;
        if (!(f[k].data = malloc(f[k].len ? f[k].len : 1)))
            goto fail;
        memcpy(f[k].data, m->buffers[i].data, f[k].len);
    }
    *frames = f;
    *n = total;
    return 0;
fail:
    wire_frames_free(f, total);
    return rc;
}
