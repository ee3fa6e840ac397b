/* utf8: RFC 3629's well-formed byte sequences (the Unicode standard's table
 * 3-7), checked byte by byte, so that a truncated sequence is told from an
 * invalid one as soon as its first wrong byte is seen. */
#include "protocol/utf8.h"

#include <stdint.h>
#include <string.h>

int utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    int n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* below: overlong */
        else if (c == 0xED)
            hi = 0x9F; /* above: surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* below: overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above: past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong), or F5 to FF */
    }
    for (int i = 1; i < n; i++) {
        if ((size_t)i >= avail)
            return -1;
        unsigned char b = p[i];
        if (i == 1 ? b < lo || b > hi : (b & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

size_t utf8_valid_prefix(const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    while (i < len) {
        if (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        int n = utf8_seq(s + i, len - i);
        if (n <= 0)
            break;
        i += (size_t)n;
    }
    return i;
}

bool utf8_valid(const char *s, size_t len)
{
    return utf8_valid_prefix(s, len) == len;
}
