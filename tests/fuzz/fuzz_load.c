/* Fuzzes load_part (protocol/load.h), the clients' parser of large strings,
 * against jansson: the first byte of the input says from how many bytes on a
 * string is taken as large (1 to 8, so that short inputs reach every path),
 * the rest is the JSON text. Checked on every input: both refuse it, or both
 * give equal values. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "protocol/load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t min = 1 + data[0] % 8;
    const char *text = (const char *)data + 1;
    json_error_t e1, e2;
    json_t *ours = load_part_from(text, size - 1, min, &e1);
    json_t *theirs = json_loadb(text, size - 1, 0, &e2);
    if (!ours != !theirs || (ours && !json_equal(ours, theirs)))
        abort();
    json_decref(ours);
    json_decref(theirs);
    return 0;
}
