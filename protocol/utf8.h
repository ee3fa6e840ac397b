/* utf8: the one UTF-8 validator of the kernel, strict as RFC 3629 is: no
 * overlong forms, no surrogates (U+D800 to U+DFFF), nothing past U+10FFFF,
 * no 5- or 6-byte forms, no lone continuation bytes. Everything that decides
 * whether bytes are text (the JSON reader, the worker's streams, the link's
 * raw text, the MCP server's file reads) asks it, so that they agree. */
#ifndef SANDPIT_UTF8_H
#define SANDPIT_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The sequence at p (avail >= 1 bytes): its length (1 to 4) when it is a
 * whole, valid one; 0 when it is invalid; -1 when it is the valid beginning
 * of one that the end of the buffer cuts off. */
int utf8_seq(const unsigned char *p, size_t avail);

/* How many bytes from the start of s are whole, valid UTF-8 (NUL included:
 * U+0000 is a character). ASCII goes eight bytes at a time. */
size_t utf8_valid_prefix(const char *s, size_t len);

/* Whether all of s[0, len) is valid UTF-8. */
bool utf8_valid(const char *s, size_t len);

#endif
