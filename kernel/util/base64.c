/* base64: RFC 4648 with padding, decoded leniently about whitespace only.
 *
 * What the kernel sends is trusted no more than anything else from a socket:
 * any character outside the alphabet, or a '=' anywhere but at the end, is an
 * error return, never a partial image written as if it were whole. */
#include "kernel/util/base64.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value_of(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

size_t base64_decode_head(const char *text, size_t len, unsigned char *out, size_t max)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len && n < max; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        int v = value_of(ch);
        if (v < 0)
            break;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return n;
}

int base64_decode(const char *text, size_t len, unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    unsigned char *buf = malloc(len / 4 * 3 + 3);
    if (!buf)
        return -ENOMEM;
    size_t n = 0, pad = 0;
    unsigned quad = 0, filled = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        int v = value_of(ch);
        if (v < 0 || pad)
            goto bad;
        quad = quad << 6 | (unsigned)v;
        if (++filled == 4) {
            buf[n++] = (unsigned char)(quad >> 16);
            buf[n++] = (unsigned char)(quad >> 8);
            buf[n++] = (unsigned char)quad;
            quad = filled = 0;
        }
    }
    /* What is left: 0 digits and no padding, 2 digits and "==", 3 and "=". */
    if (filled == 1 || (filled == 0 && pad) || (filled && pad && filled + pad != 4) ||
        pad > 2)
        goto bad;
    if (filled == 2) {
        buf[n++] = (unsigned char)(quad >> 4);
    } else if (filled == 3) {
        buf[n++] = (unsigned char)(quad >> 10);
        buf[n++] = (unsigned char)(quad >> 2);
    }
    *out = buf;
    *outlen = n;
    return 0;
bad:
    free(buf);
    return -EINVAL;
}

/* Two characters for each 12 bits: a group of three bytes is two lookups. */
static uint16_t pairs[4096];
static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

static void make_pairs(void)
{
    for (unsigned v = 0; v < 4096; v++) {
        unsigned char two[2] = {(unsigned char)alphabet[v >> 6],
                                (unsigned char)alphabet[v & 63]};
        memcpy(&pairs[v], two, 2);
    }
}

size_t base64_encoded_len(size_t len)
{
    return (len + 2) / 3 * 4;
}

void base64_encode_into(const unsigned char *data, size_t len, char *out)
{
    pthread_once(&pairs_once, make_pairs);
    size_t i = 0;
    char *o = out;
    for (; i + 2 < len; i += 3, o += 4) {
        unsigned v = (unsigned)data[i] << 16 | (unsigned)data[i + 1] << 8 | data[i + 2];
        memcpy(o, &pairs[v >> 12], 2);
        memcpy(o + 2, &pairs[v & 4095], 2);
    }
    if (i < len) {
        unsigned v =
            (unsigned)data[i] << 16 | (i + 1 < len ? (unsigned)data[i + 1] << 8 : 0);
        *o++ = alphabet[v >> 18 & 63];
        *o++ = alphabet[v >> 12 & 63];
        *o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
        *o++ = '=';
    }
}

char *base64_encode(const unsigned char *data, size_t len)
{
    size_t n = base64_encoded_len(len);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    base64_encode_into(data, len, s);
    s[n] = 0;
    return s;
}
