/* fuzz_frames: turns a fuzzer's input into a list of ZeroMQ frames, for the harnesses
 * of the wire splitter and the message parser. Frames are separated by the byte 0x1e
 * (ASCII's record separator), so that the seeds in tests/fuzz/corpus/ stay readable.
 * The frames borrow from the input; the array is the caller's to free. */
#ifndef SANDPIT_FUZZ_FRAMES_H
#define SANDPIT_FUZZ_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/wire.h"

#define FUZZ_SEPARATOR  0x1e
#define FUZZ_MAX_FRAMES 2048

/* Splits data at each separator; returns a new array (caller frees) and its length in
 * *n, or NULL when out of memory. */
static inline struct wire_frame *fuzz_frames(const uint8_t *data, size_t size, size_t *n)
{
    struct wire_frame *f = calloc(FUZZ_MAX_FRAMES, sizeof *f);
    *n = 0;
    if (!f)
        return NULL;
    size_t start = 0;
    for (size_t i = 0; i <= size && *n < FUZZ_MAX_FRAMES; i++) {
        if (i < size && data[i] != FUZZ_SEPARATOR)
            continue;
        f[*n].data = (void *)(data + start);
        f[*n].len = i - start;
        (*n)++;
        start = i + 1;
    }
    return f;
}

#endif
