/* load: parses a message part as jansson does, but decodes its large strings
 * (LOAD_LARGE bytes of JSON text and more: a chart's base64, a long stream)
 * itself, in one pass with long runs copied whole, where jansson goes through
 * them a byte at a time. The counterpart of dump.h, for the clients, where a
 * large output is most of the work of receiving it. What it accepts and what
 * it refuses are jansson's: invalid UTF-8, control characters, bad escapes,
 * lone surrogates and \u0000 are refused in large strings as in small ones. */
#ifndef SANDPIT_LOAD_H
#define SANDPIT_LOAD_H

#include <jansson.h>
#include <stddef.h>

#define LOAD_LARGE (64u << 10)

/* The JSON value of text, or NULL with *err filled (as json_loadb). */
json_t *load_part(const char *text, size_t len, json_error_t *err);

/* The same, with strings of min bytes and more taken as large (the tests and
 * the fuzzer use small ones, so that every path is reached with short texts). */
json_t *load_part_from(const char *text, size_t len, size_t min, json_error_t *err);

#endif
