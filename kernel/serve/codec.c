/* codec: Jupyter messages as WebSocket messages (codec.h).
 *
 * The hard part is the decoder: its input is a network client's frame, and
 * both binary forms are a table of offsets the client wrote. Each offset is
 * checked to lie inside the frame and not before the one ahead of it, the
 * count of parts is bounded before anything is allocated for them, and each
 * JSON part must be an object (the header one with a string msg_type and
 * msg_id) before a message is made of it. The encoder writes the JSON parts
 * with dump_part, which escapes a large output's strings in one pass. */
#include "kernel/serve/codec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/dump.h"
#include "protocol/errbuf.h"
#include "protocol/wire.h"

static const char *const channel_names[] = {
    [CONNECTION_SHELL] = "shell",
    [CONNECTION_IOPUB] = "iopub",
    [CONNECTION_STDIN] = "stdin",
    [CONNECTION_CONTROL] = "control",
};

int codec_channel(const char *name)
{
    for (int i = 0; i < CONNECTION_HB; i++)
        if (name && strcmp(name, channel_names[i]) == 0)
            return i;
    return -1;
}

/* A growing byte buffer. */
struct bbuf {
    unsigned char *p;
    size_t len, cap;
    bool failed;
};

static void bbuf_add(struct bbuf *b, const void *data, size_t len)
{
    if (b->failed)
        return;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (len && data)
        memcpy(b->p + b->len, data, len);
    else if (len)
        memset(b->p + b->len, 0, len);
    b->len += len;
}

static void bbuf_str(struct bbuf *b, const char *s)
{
    bbuf_add(b, s, strlen(s));
}

static void bbuf_json(struct bbuf *b, const json_t *v)
{
    size_t n = 0;
    char *text = v ? dump_part(v, &n) : strdup("{}");
    if (!text) {
        b->failed = true;
        return;
    }
    bbuf_add(b, text, v ? n : 2);
    free(text);
}

/* The legacy JSON object of m, with its buffers member when with_buffers. */
static void legacy_json(struct bbuf *b, const struct msg *m, const char *channel,
                        bool with_buffers)
{
    json_t *id = json_string(msg_id(m)), *type = json_string(msg_type(m));
    json_t *ch = json_string(channel);
    bbuf_str(b, "{\"header\":");
    bbuf_json(b, m->header);
    bbuf_str(b, ",\"msg_id\":");
    bbuf_json(b, id);
    bbuf_str(b, ",\"msg_type\":");
    bbuf_json(b, type);
    bbuf_str(b, ",\"parent_header\":");
    bbuf_json(b, m->parent_header);
    bbuf_str(b, ",\"metadata\":");
    bbuf_json(b, m->metadata);
    bbuf_str(b, ",\"content\":");
    bbuf_json(b, m->content);
    if (with_buffers)
        bbuf_str(b, ",\"buffers\":[]");
    bbuf_str(b, ",\"channel\":");
    bbuf_json(b, ch);
    bbuf_str(b, "}");
    if (!id || !type || !ch)
        b->failed = true;
    json_decref(id);
    json_decref(type);
    json_decref(ch);
}

static void put_u32be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void encode_legacy(struct bbuf *b, const struct msg *m, const char *channel,
                          size_t pre)
{
    if (!m->nbuffers) {
        legacy_json(b, m, channel, true);
        return;
    }
    size_t nbufs = 1 + m->nbuffers, head = 4 * (nbufs + 1);
    bbuf_add(b, NULL, head);
    size_t json_at = b->len;
    legacy_json(b, m, channel, false);
    uint32_t off = (uint32_t)head;
    size_t at = json_at;
    for (size_t i = 0; i < nbufs && !b->failed; i++) {
        put_u32be(b->p + pre + 4 * (i + 1), off);
        size_t part = i == 0 ? b->len - json_at : m->buffers[i - 1].len;
        if (i > 0)
            bbuf_add(b, m->buffers[i - 1].data, part);
        at += part;
        off = (uint32_t)(at - pre);
    }
    if (!b->failed)
        put_u32be(b->p + pre, (uint32_t)nbufs);
}

static void encode_v1(struct bbuf *b, const struct msg *m, const char *channel,
                      size_t pre)
{
    const json_t *parts[4] = {m->header, m->parent_header, m->metadata, m->content};
    size_t nparts = 1 + 4 + m->nbuffers, noffsets = nparts + 1;
    size_t head = 8 * (1 + noffsets);
    bbuf_add(b, NULL, head);
    size_t ends[1 + 4 + WIRE_MAX_BUFFERS];
    bbuf_str(b, channel);
    ends[0] = b->len - pre;
    for (int i = 0; i < 4; i++) {
        bbuf_json(b, parts[i]);
        ends[1 + i] = b->len - pre;
    }
    for (size_t i = 0; i < m->nbuffers && i < WIRE_MAX_BUFFERS; i++) {
        bbuf_add(b, m->buffers[i].data, m->buffers[i].len);
        ends[5 + i] = b->len - pre;
    }
    if (b->failed)
        return;
    put_u64le(b->p + pre, noffsets);
    put_u64le(b->p + pre + 8, head);
    for (size_t i = 0; i < nparts; i++)
        put_u64le(b->p + pre + 8 * (2 + i), ends[i]);
}

int codec_encode(const struct msg *m, const char *channel, enum codec_proto p, size_t pre,
                 unsigned char **out, size_t *len, bool *binary)
{
    struct bbuf b = {0};
    *out = NULL;
    *len = 0;
    if (m->nbuffers > WIRE_MAX_BUFFERS)
        return -ENOMEM;
    bbuf_add(&b, NULL, pre);
    if (p == CODEC_V1)
        encode_v1(&b, m, channel, pre);
    else
        encode_legacy(&b, m, channel, pre);
    if (b.failed) {
        free(b.p);
        return -ENOMEM;
    }
    *out = b.p;
    *len = b.len - pre;
    *binary = p == CODEC_V1 || m->nbuffers > 0;
    return 0;
}

/* --- decoding ------------------------------------------------------------ */

static json_t *parse_object(const void *data, size_t len)
{
    json_error_t e;
    json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES, &e);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

static bool header_ok(const json_t *h)
{
    return json_is_object(h) && json_is_string(json_object_get(h, "msg_type")) &&
           json_is_string(json_object_get(h, "msg_id"));
}

/* A new msg from its four parts, taken over (each set to NULL); a missing
 * part other than the header becomes {}. NULL on a bad header or no memory. */
static struct msg *make_msg(json_t **parts)
{
    struct msg *m = NULL;
    if (header_ok(parts[0]) && (m = calloc(1, sizeof *m))) {
        json_t **slots[4] = {&m->header, &m->parent_header, &m->metadata, &m->content};
        for (int i = 0; i < 4; i++) {
            *slots[i] = parts[i] ? parts[i] : json_object();
            parts[i] = NULL;
        }
        if (!m->parent_header || !m->metadata || !m->content) {
            msg_free(m);
            m = NULL;
        }
    }
    for (int i = 0; i < 4; i++) {
        json_decref(parts[i]);
        parts[i] = NULL;
    }
    return m;
}

/* A part of a legacy JSON message: absent or null is {}, else an object. */
static bool legacy_part(json_t *root, const char *key, json_t **out)
{
    json_t *v = json_object_get(root, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v))
        return false;
    *out = json_incref(v);
    return true;
}

static int decode_legacy_json(const void *data, size_t len, enum connection_channel *ch,
                              struct msg **out, char *err, size_t errlen)
{
    json_t *root = parse_object(data, len), *parts[4] = {NULL};
    int channel = codec_channel(json_string_value(json_object_get(root, "channel")));
    bool ok = root && channel >= 0 && legacy_part(root, "header", &parts[0]) &&
              legacy_part(root, "parent_header", &parts[1]) &&
              legacy_part(root, "metadata", &parts[2]) &&
              legacy_part(root, "content", &parts[3]);
    json_decref(root);
    if (!ok) {
        for (int i = 0; i < 4; i++)
            json_decref(parts[i]);
        return errbuf_set(-EBADMSG, err, errlen,
                          "not a message: a JSON object with a channel "
                          "(shell, control, stdin) and a header is expected");
    }
    if (!(*out = make_msg(parts)))
        return errbuf_set(-EBADMSG, err, errlen,
                          "the header needs a msg_id and a msg_type");
    *ch = (enum connection_channel)channel;
    return 0;
}

static uint64_t get_u32be(const unsigned char *p)
{
    return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
}

static uint64_t get_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Reads n offsets of size w (4: u32 BE; 8: u64 LE) after the count, checks
 * that they rise within len, and that the first is past the table. */
static bool read_offsets(const unsigned char *data, size_t len, size_t n, size_t w,
                         uint64_t *offs)
{
    if ((n + 1) * w > len)
        return false;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = data + w * (i + 1);
        offs[i] = w == 4 ? get_u32be(p) : get_u64le(p);
        if (offs[i] > len || (i > 0 && offs[i] < offs[i - 1]) ||
            (i == 0 && offs[i] < (n + 1) * w))
            return false;
    }
    return true;
}

static int add_buffers(struct msg *m, const unsigned char *data, const uint64_t *offs,
                       size_t from, size_t to, size_t end)
{
    for (size_t i = from; i < to; i++) {
        uint64_t stop = i + 1 < to ? offs[i + 1] : end;
        if (msg_add_buffer(m, data + offs[i], (size_t)(stop - offs[i])))
            return -ENOMEM;
    }
    return 0;
}

static int decode_legacy_binary(const unsigned char *data, size_t len,
                                enum connection_channel *ch, struct msg **out, char *err,
                                size_t errlen)
{
    uint64_t offs[1 + WIRE_MAX_BUFFERS];
    uint64_t n = len >= 4 ? get_u32be(data) : 0;
    if (n < 1 || n > 1 + WIRE_MAX_BUFFERS || !read_offsets(data, len, (size_t)n, 4, offs))
        return errbuf_set(-EBADMSG, err, errlen,
                          "not a binary message: bad offsets (at most %d buffers)",
                          WIRE_MAX_BUFFERS);
    uint64_t json_end = n > 1 ? offs[1] : len;
    int rc = decode_legacy_json(data + offs[0], (size_t)(json_end - offs[0]), ch, out,
                                err, errlen);
    if (rc == 0 && add_buffers(*out, data, offs, 1, (size_t)n, len)) {
        msg_free(*out);
        *out = NULL;
        rc = -ENOMEM;
    }
    return rc;
}

static int decode_v1(const unsigned char *data, size_t len, enum connection_channel *ch,
                     struct msg **out, char *err, size_t errlen)
{
    uint64_t offs[2 + 4 + WIRE_MAX_BUFFERS];
    uint64_t n = len >= 8 ? get_u64le(data) : 0;
    /* The offsets: the channel's start, then the end of each part. */
    if (n < 6 || n > 2 + 4 + WIRE_MAX_BUFFERS ||
        !read_offsets(data, len, (size_t)n, 8, offs))
        return errbuf_set(-EBADMSG, err, errlen,
                          "not a v1 message: bad offsets (a channel, four parts and at "
                          "most %d buffers)",
                          WIRE_MAX_BUFFERS);
    char name[16] = "";
    size_t nlen = (size_t)(offs[1] - offs[0]);
    if (nlen < sizeof name)
        memcpy(name, data + offs[0], nlen);
    int channel = nlen < sizeof name ? codec_channel(name) : -1;
    json_t *parts[4] = {NULL};
    for (int i = 0; i < 4 && channel >= 0; i++)
        if (offs[2 + i] > offs[1 + i] &&
            !(parts[i] =
                  parse_object(data + offs[1 + i], (size_t)(offs[2 + i] - offs[1 + i]))))
            channel = -2;
    if (channel < 0) {
        for (int i = 0; i < 4; i++)
            json_decref(parts[i]);
        return errbuf_set(-EBADMSG, err, errlen,
                          channel == -1
                              ? "not a v1 message: unknown channel"
                              : "not a v1 message: a part is not a JSON object");
    }
    if (!(*out = make_msg(parts)))
        return errbuf_set(-EBADMSG, err, errlen,
                          "the header needs a msg_id and a msg_type");
    /* The buffers: part 6 on, each ending at the next offset; the last offset
     * is the end of the last part. */
    size_t nbuf = (size_t)n - 6;
    for (size_t i = 0; i < nbuf; i++)
        if (msg_add_buffer(*out, data + offs[5 + i],
                           (size_t)(offs[6 + i] - offs[5 + i]))) {
            msg_free(*out);
            *out = NULL;
            return -ENOMEM;
        }
    *ch = (enum connection_channel)channel;
    return 0;
}

int codec_decode(const unsigned char *data, size_t len, bool binary, enum codec_proto p,
                 enum connection_channel *channel, struct msg **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (p == CODEC_V1) {
        if (!binary)
            return errbuf_set(-EBADMSG, err, errlen, "a v1 message is a binary frame");
        return decode_v1(data, len, channel, out, err, errlen);
    }
    if (binary)
        return decode_legacy_binary(data, len, channel, out, err, errlen);
    return decode_legacy_json(data, len, channel, out, err, errlen);
}
