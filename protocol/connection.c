/* connection: parse a Jupyter connection file.
 *
 * The file comes from the client, so everything in it is checked: each port is
 * an integer in 0..65535 (0 is rejected: the kernel binds what the client
 * chose), transport is tcp or ipc, the scheme is one we can compute. The key is
 * kept as bytes: jupyter_client signs with the UTF-8 bytes of the key string. */
#include "protocol/connection.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/errbuf.h"

static const char *const channel_names[CONNECTION_NCHANNELS] = {
    [CONNECTION_SHELL] = "shell", [CONNECTION_IOPUB] = "iopub",
    [CONNECTION_STDIN] = "stdin", [CONNECTION_CONTROL] = "control",
    [CONNECTION_HB] = "hb",
};

const char *connection_channel_name(enum connection_channel ch)
{
    return ch < CONNECTION_NCHANNELS ? channel_names[ch] : "?";
}

void connection_init(struct connection *c)
{
    memset(c, 0, sizeof *c);
}

void connection_release(struct connection *c)
{
    free(c->transport);
    free(c->ip);
    if (c->key)
        memset(c->key, 0, c->key_len);
    free(c->key);
    free(c->signature_scheme);
    free(c->kernel_name);
    connection_init(c);
}

/* A string field: required fields must be present; optional ones default to dflt. */
static int get_string(json_t *root, const char *name, const char *dflt, char **out,
                      char *err, size_t errlen)
{
    json_t *v = json_object_get(root, name);
    if (!v) {
        if (!dflt)
            return errbuf_set(-EINVAL, err, errlen, "connection file has no \"%s\"",
                              name);
        *out = strdup(dflt);
    } else if (!json_is_string(v)) {
        return errbuf_set(-EINVAL, err, errlen,
                          "connection file field \"%s\" is not a string", name);
    } else {
        *out = strndup(json_string_value(v), json_string_length(v));
    }
    return *out ? 0 : -ENOMEM;
}

int connection_parse(struct connection *c, const char *text, size_t len, char *err,
                     size_t errlen)
{
    connection_init(c);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return errbuf_set(-EINVAL, err, errlen,
                          "connection file is not valid JSON (line %d: %s)", jerr.line,
                          jerr.text);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = errbuf_set(-EINVAL, err, errlen, "connection file is not a JSON object");
        goto out;
    }
    if ((rc = get_string(root, "transport", "tcp", &c->transport, err, errlen)) ||
        (rc = get_string(root, "ip", NULL, &c->ip, err, errlen)) ||
        (rc = get_string(root, "signature_scheme", "hmac-sha256", &c->signature_scheme,
                         err, errlen)) ||
        (rc = get_string(root, "kernel_name", "", &c->kernel_name, err, errlen)))
        goto out;
    if (strcmp(c->transport, "tcp") != 0 && strcmp(c->transport, "ipc") != 0) {
        rc = errbuf_set(-EINVAL, err, errlen,
                        "connection file transport \"%s\" is not tcp or ipc",
                        c->transport);
        goto out;
    }
    if (strcmp(c->signature_scheme, "hmac-sha256") != 0) {
        rc = errbuf_set(-EINVAL, err, errlen,
                        "connection file signature_scheme \"%s\" is not supported "
                        "(sandpit signs with hmac-sha256)",
                        c->signature_scheme);
        goto out;
    }
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        char field[32];
        snprintf(field, sizeof field, "%s_port", channel_names[ch]);
        json_t *v = json_object_get(root, field);
        if (!v) {
            rc = errbuf_set(-EINVAL, err, errlen, "connection file has no \"%s\"", field);
            goto out;
        }
        if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
            json_integer_value(v) > 65535) {
            rc = errbuf_set(-EINVAL, err, errlen,
                            "connection file field \"%s\" is not a port number", field);
            goto out;
        }
        c->ports[ch] = (int)json_integer_value(v);
    }
    json_t *key = json_object_get(root, "key");
    if (key && !json_is_string(key)) {
        rc = errbuf_set(-EINVAL, err, errlen,
                        "connection file field \"key\" is not a string");
        goto out;
    }
    c->key_len = key ? json_string_length(key) : 0;
    c->key = malloc(c->key_len + 1);
    if (!c->key) {
        rc = -ENOMEM;
        goto out;
    }
    if (c->key_len)
        memcpy(c->key, json_string_value(key), c->key_len);
    c->key[c->key_len] = 0;
out:
    json_decref(root);
    if (rc)
        connection_release(c);
    return rc;
}

int connection_load(struct connection *c, const char *path, char *err, size_t errlen)
{
    connection_init(c);
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "cannot open connection file %s: %s", path,
                     strerror(e));
        return -e;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (cap - len < 4096) {
            if (cap > (1u << 20)) {
                rc = errbuf_set(-EINVAL, err, errlen, "connection file %s is too large",
                                path);
                goto out;
            }
            char *nb = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!nb) {
                rc = -ENOMEM;
                goto out;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = -EIO;
        if (err && errlen)
            snprintf(err, errlen, "cannot read connection file %s", path);
        goto out;
    }
    rc = connection_parse(c, buf, len, err, errlen);
    if (rc && err && errlen) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", err);
        snprintf(err, errlen, "%s: %s", path, tmp);
    }
out:
    if (buf)
        memset(buf, 0, cap); /* it held the key */
    free(buf);
    fclose(f);
    return rc;
}

int connection_endpoint(const struct connection *c, enum connection_channel ch, char *buf,
                        size_t len)
{
    int n;
    if (strcmp(c->transport, "ipc") == 0)
        n = snprintf(buf, len, "ipc://%s-%d", c->ip, c->ports[ch]);
    else if (strchr(c->ip, ':'))
        n = snprintf(buf, len, "tcp://[%s]:%d", c->ip, c->ports[ch]);
    else
        n = snprintf(buf, len, "tcp://%s:%d", c->ip, c->ports[ch]);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
