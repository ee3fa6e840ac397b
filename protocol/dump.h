/* dump: the JSON text of a message's part, made quickly when it holds large
 * strings. Last step before signing (msg_serialize): a chart's base64 or a
 * long stream is most of what the kernel sends, and jansson escapes it a
 * character at a time through callbacks; here the large strings (those at
 * the top of the part, or one level down, as a stream's "text" and a
 * display's "data" values are) are escaped in one pass and put in beside
 * what jansson dumps of the rest. The text means the same object; only the
 * order of its members may differ, which JSON leaves free. */
#ifndef SANDPIT_DUMP_H
#define SANDPIT_DUMP_H

#include <jansson.h>
#include <stddef.h>

/* Strings at least this long are escaped here rather than by jansson. */
#define DUMP_LARGE_STRING (64u << 10)

/* The compact JSON text of v (any value; new, caller frees with free()), its
 * length in *len. NULL when out of memory. */
char *dump_part(const json_t *v, size_t *len);

/* Appends the JSON string literal of s[0, len) (quotes included) to out, which
 * must have room for dump_string_size(s, len) bytes; returns the bytes
 * written. s is UTF-8 (jansson's strings are); NUL and other control
 * characters are escaped as jansson escapes them. */
size_t dump_string(char *out, const char *s, size_t len);
size_t dump_string_size(const char *s, size_t len);

#endif
