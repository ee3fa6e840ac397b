/* Fuzzes msg_parse, the kernel's front door. The first byte of the input picks how the
 * message is signed, so that the JSON behind the signature is reached too:
 *   0  as given (nearly always a bad signature: the verifier is what is fuzzed);
 *   1  the harness signs the four JSON parts with the key "k" (the parser is fuzzed);
 *   2  no key: nothing is signed.
 * The rest is frames separated by 0x1e. Checked on every input: the result is one of
 * the documented errors, *out is set exactly when the contract says, a parsed message
 * serialises and parses back to the same JSON, and a message accepted once is refused
 * as a replay the second time. The signers live as long as the process (making one,
 * and its history, for every input would cost more than the parse), so their history
 * fills and rolls over as it does in a long-lived kernel. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/msg.h"
#include "protocol/sign.h"
#include "protocol/wire.h"
#include "tests/fuzz/fuzz_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sign keyed, unkeyed;

/* Serialises m and parses it back, unsigned (the signature was checked on the way in;
 * here the JSON is what must survive). */
static void check_round_trip(const struct msg *m)
{
    struct wire_frame *out;
    size_t n;
    if (msg_serialize(m, &unkeyed, &out, &n) != 0)
        return; /* out of memory */
    struct msg *back = NULL;
    char err[256];
    int rc = msg_parse(out, n, &unkeyed, &back, err, sizeof err);
    if (rc != 0 || !json_equal(back->header, m->header) ||
        !json_equal(back->content, m->content) ||
        !json_equal(back->metadata, m->metadata) ||
        !json_equal(back->parent_header, m->parent_header) ||
        back->nidents != m->nidents || back->nbuffers != m->nbuffers)
        abort();
    msg_free(back);
    wire_frames_free(out, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    size_t n;
    struct wire_frame *frames = fuzz_frames(data + 1, size - 1, &n);
    if (!frames)
        return 0;
    if (!keyed.enabled &&
        (sign_init(&keyed, "hmac-sha256", (const unsigned char *)"k", 1) ||
         sign_init(&unkeyed, "hmac-sha256", NULL, 0)))
        abort();
    struct sign *s = mode == 2 ? &unkeyed : &keyed;
    char hex[SIGN_HEX_LEN + 1];
    struct wire_parts p;
    char err[256] = "";
    if (mode == 1 && wire_split(frames, n, &p, err, sizeof err) == 0) {
        struct sign_part parts[WIRE_NPARTS];
        for (int i = 0; i < WIRE_NPARTS; i++) {
            parts[i].data = p.json[i]->data;
            parts[i].len = p.json[i]->len;
        }
        if (sign_compute(s, parts, hex) == 0) {
            struct wire_frame *sig = (struct wire_frame *)p.signature;
            sig->data = hex;
            sig->len = SIGN_HEX_LEN;
        }
    }
    struct msg *m = (struct msg *)s; /* must be overwritten */
    err[0] = 0;
    int rc = msg_parse(frames, n, s, &m, err, sizeof err);
    switch (rc) {
    case 0:
        if (!m || !json_is_object(m->content) || !msg_type(m)[0])
            abort();
        check_round_trip(m);
        break;
    case -EPROTO:
        if (!m || !err[0] || json_object_size(m->content) != 0)
            abort();
        break;
    case -EBADMSG:
    case -EACCES:
    case -EALREADY:
        if (m || !err[0])
            abort();
        break;
    case -ENOMEM:
        if (m)
            abort();
        break;
    default:
        abort();
    }
    if (s->enabled && (rc == 0 || rc == -EPROTO)) {
        struct msg *again = NULL;
        if (msg_parse(frames, n, s, &again, err, sizeof err) != -EALREADY || again)
            abort();
    }
    msg_free(m);
    free(frames);
    return 0;
}
