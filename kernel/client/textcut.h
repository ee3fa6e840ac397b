/* textcut: a stream printed as it arrives, within a number of characters.
 * Its beginning (half of them) is written at once, so that a long cell shows
 * its progress; past that, only its end is kept, in memory, up to the other
 * half, and written when the caller says (textcut_flush): a line saying how
 * many characters were cut, then the end. Characters are UTF-8 code points,
 * as --max-chars counts them; a stream's texts hold whole characters. */
#ifndef SANDPIT_TEXTCUT_H
#define SANDPIT_TEXTCUT_H

#include <stddef.h>
#include <stdio.h>

struct textcut {
    FILE *f;          /* borrowed */
    size_t max_chars; /* 0: no limit, everything is written at once */
    size_t shown;     /* characters of the beginning written */
    char *tail;       /* what came past the beginning: its last part, owned */
    size_t tail_len, tail_chars;
    size_t cut; /* characters dropped from the front of tail */
};

void textcut_init(struct textcut *t, FILE *f, size_t max_chars);
/* Writes or keeps n bytes of text. */
void textcut_add(struct textcut *t, const char *text, size_t n);
/* Writes what is kept of the end (after the line saying how much was cut, if
 * any was); what comes later is kept as an end again. */
void textcut_flush(struct textcut *t);
/* textcut_flush, then frees what t holds. */
void textcut_finish(struct textcut *t);

#endif
