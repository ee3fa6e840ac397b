/* Fuzzes wire_split, the first step every message from a client goes through: any list
 * of frames gives 0 or -EBADMSG with a sentence, and on success the parts it hands out
 * lie within the frames it was given and respect the limits of wire.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "protocol/wire.h"
#include "tests/fuzz/fuzz_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    struct wire_frame *frames = fuzz_frames(data, size, &n);
    if (!frames)
        return 0;
    struct wire_parts p;
    char err[256] = "";
    int rc = wire_split(frames, n, &p, err, sizeof err);
    if (rc != 0 && (rc != -EBADMSG || !err[0]))
        abort();
    if (rc == 0) {
        if (p.nidents > WIRE_MAX_IDENTS || p.nbuffers > WIRE_MAX_BUFFERS)
            abort();
        if (p.signature < frames || p.signature >= frames + n)
            abort();
        for (int i = 0; i < WIRE_NPARTS; i++)
            if (p.json[i] < frames || p.json[i] >= frames + n ||
                p.json[i]->len > WIRE_MAX_JSON)
                abort();
        if (p.nidents + 2 + WIRE_NPARTS + p.nbuffers != n)
            abort();
    }
    free(frames);
    return 0;
}
