/* base64: the encoding Jupyter uses for binary MIME data (image/png) in JSON.
 * The worker encodes a cell's images; the client decodes a kernel's images to
 * write them as files, and encodes a workspace file to hand it to an MCP
 * client. */
#ifndef SANDPIT_BASE64_H
#define SANDPIT_BASE64_H

#include <stddef.h>

/* Decodes text (len bytes; newlines and other whitespace are skipped, as in
 * the line-wrapped base64 some kernels send). On success *out is a new buffer
 * (caller frees) of *outlen bytes. Returns 0, -EINVAL for a character outside
 * the alphabet or bad padding, or -ENOMEM. */
int base64_decode(const char *text, size_t len, unsigned char **out, size_t *outlen);

/* Decodes the first bytes of text (whitespace skipped) into out: how many, at
 * most max, stopping at the first character outside the alphabet ('=' among
 * them). Allocates nothing: for a look at what a long text begins with. */
size_t base64_decode_head(const char *text, size_t len, unsigned char *out, size_t max);

/* Encodes len bytes as one line without newlines. Returns a new NUL-terminated
 * string (caller frees), or NULL when out of memory. */
char *base64_encode(const unsigned char *data, size_t len);

/* The length of len bytes encoded (without a NUL). */
size_t base64_encoded_len(size_t len);

/* Encodes len bytes into out, which has room for base64_encoded_len(len)
 * (no NUL is written). */
void base64_encode_into(const unsigned char *data, size_t len, char *out);

#endif
