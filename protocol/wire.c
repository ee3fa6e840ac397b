/* wire: split a frame list at <IDS|MSG>.
 *
 * Everything before the delimiter is routing (ROUTER identities); after it come
 * exactly a signature and four JSON parts, then any number of buffers. The
 * checks here are what keeps one malformed message from reaching the parser:
 * each failure is an error return, never a crash, never an assertion. */
#include "protocol/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/errbuf.h"

int wire_split(const struct wire_frame *frames, size_t n, struct wire_parts *out,
               char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t d = 0;
    while (d < n && !(frames[d].len == WIRE_DELIM_LEN &&
                      memcmp(frames[d].data, WIRE_DELIM, WIRE_DELIM_LEN) == 0))
        d++;
    if (d == n)
        return errbuf_set(-EBADMSG, err, errlen, "no <IDS|MSG> delimiter in %zu frames",
                          n);
    if (d > WIRE_MAX_IDENTS)
        return errbuf_set(-EBADMSG, err, errlen,
                          "%zu identities before the delimiter (at most %d)", d,
                          WIRE_MAX_IDENTS);
    if (n - d - 1 < 1 + WIRE_NPARTS)
        return errbuf_set(-EBADMSG, err, errlen,
                          "%zu frames after the delimiter (at least %d)", n - d - 1,
                          1 + WIRE_NPARTS);
    out->idents = frames;
    out->nidents = d;
    out->signature = &frames[d + 1];
    for (int i = 0; i < WIRE_NPARTS; i++) {
        out->json[i] = &frames[d + 2 + i];
        if (out->json[i]->len > WIRE_MAX_JSON)
            return errbuf_set(-EBADMSG, err, errlen,
                              "a JSON part of %zu bytes (at most %u)", out->json[i]->len,
                              WIRE_MAX_JSON);
    }
    out->buffers = &frames[d + 2 + WIRE_NPARTS];
    out->nbuffers = n - d - 2 - WIRE_NPARTS;
    if (out->nbuffers > WIRE_MAX_BUFFERS)
        return errbuf_set(-EBADMSG, err, errlen, "%zu buffers (at most %d)",
                          out->nbuffers, WIRE_MAX_BUFFERS);
    return 0;
}

void wire_frames_free(struct wire_frame *frames, size_t n)
{
    if (!frames)
        return;
    for (size_t i = 0; i < n; i++)
        free(frames[i].data);
    free(frames);
}
