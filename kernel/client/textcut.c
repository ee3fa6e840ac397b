/* textcut: the beginning of a stream at once, its end when asked (see
 * textcut.h). Memory is bounded: the end kept is trimmed to its half of the
 * characters whenever it holds twice that and a little. */
#include "kernel/client/textcut.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TRIM_SLACK 4096 /* characters past twice the end's share before a trim */

static bool is_lead(unsigned char b)
{
    return (b & 0xC0) != 0x80;
}

void textcut_init(struct textcut *t, FILE *f, size_t max_chars)
{
    memset(t, 0, sizeof *t);
    t->f = f;
    t->max_chars = max_chars;
}

/* Drops characters from the front of the kept end until keep are left. */
static void trim(struct textcut *t, size_t keep)
{
    if (t->tail_chars <= keep)
        return;
    size_t drop = t->tail_chars - keep, off = 0;
    while (drop > 0 && off < t->tail_len) {
        off++;
        while (off < t->tail_len && !is_lead((unsigned char)t->tail[off]))
            off++;
        drop--;
        t->cut++;
    }
    memmove(t->tail, t->tail + off, t->tail_len - off);
    t->tail_len -= off;
    t->tail_chars = keep;
}

void textcut_add(struct textcut *t, const char *text, size_t n)
{
    size_t head = t->max_chars - t->max_chars / 2, keep = t->max_chars / 2, i = 0;
    if (t->max_chars == 0) {
        i = n;
    } else {
        while (i < n && t->shown < head) {
            i++;
            while (i < n && !is_lead((unsigned char)text[i]))
                i++;
            t->shown++;
        }
    }
    if (i) {
        fwrite(text, 1, i, t->f);
        fflush(t->f);
    }
    if (i == n)
        return;
    char *nb = realloc(t->tail, t->tail_len + (n - i));
    if (!nb)
        return; /* out of memory: this piece is lost, the rest goes on */
    t->tail = nb;
    memcpy(t->tail + t->tail_len, text + i, n - i);
    t->tail_len += n - i;
    for (size_t j = i; j < n; j++)
        t->tail_chars += is_lead((unsigned char)text[j]);
    if (t->tail_chars > 2 * keep + TRIM_SLACK)
        trim(t, keep);
}

void textcut_flush(struct textcut *t)
{
    trim(t, t->max_chars / 2);
    if (t->cut)
        fprintf(t->f, "\n[... %zu characters cut ...]\n", t->cut);
    if (t->tail_len)
        fwrite(t->tail, 1, t->tail_len, t->f);
    fflush(t->f);
    t->tail_len = t->tail_chars = t->cut = 0;
}

void textcut_finish(struct textcut *t)
{
    textcut_flush(t);
    free(t->tail);
    t->tail = NULL;
}
