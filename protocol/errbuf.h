/* errbuf: error sentences for callers. Functions that can fail on input from
 * outside (a connection file, a frame, a command line) return -errno and write
 * a sentence saying why into a buffer the caller passes (which may be NULL). */
#ifndef SANDPIT_ERRBUF_H
#define SANDPIT_ERRBUF_H

#include <stddef.h>

/* Formats the sentence into err (when err and errlen are set); returns rc. */
int errbuf_set(int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
