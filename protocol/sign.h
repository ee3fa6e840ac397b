/* sign: HMAC-SHA256 signatures of Jupyter messages.
 * Used by msg on every message in (accept) and out (compute). The signer keeps
 * a keyed MAC context made once, and the digests of the messages it accepted
 * lately, to refuse one sent twice; an empty key means messages are not signed.
 * The signer owns both; sign_release frees them. */
#ifndef SANDPIT_SIGN_H
#define SANDPIT_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#define SIGN_HEX_LEN 64 /* hex digits of an HMAC-SHA256 digest */
/* Signatures remembered to refuse a replay: at least this many of the latest ones,
 * at most twice as many (jupyter_client's Session keeps 65536 and culls at random). */
#define SIGN_HISTORY 16384

struct sign_part {
    const void *data;
    size_t len;
};

struct sign_seen;

struct sign {
    bool enabled;
    void *mac;              /* the keyed hash states (sign.c) */
    struct sign_seen *seen; /* digests accepted lately; made at the first accept */
};

/* Keys the signer: the key is not kept, the hash states it leads to are. An
 * empty key disables signing. Returns 0, -EINVAL for an unknown scheme, -ENOMEM. */
int sign_init(struct sign *s, const char *scheme, const unsigned char *key,
              size_t key_len);
void sign_release(struct sign *s);

/* Computes the hex signature of the parts (header, parent, metadata, content)
 * into hex, which must hold SIGN_HEX_LEN + 1 bytes. With signing disabled it
 * writes "". Returns 0 or -EIO. */
int sign_compute(const struct sign *s, const struct sign_part parts[4], char *hex);

/* True if sig (not NUL-terminated) is the signature of the parts: 64 lower-case hex
 * digits (the canonical form clients send; upper case is refused), compared in
 * constant time. With signing disabled, every signature is accepted. */
bool sign_verify(const struct sign *s, const struct sign_part parts[4], const void *sig,
                 size_t sig_len);

/* Verifies sig as sign_verify does, then remembers it: a message is accepted once.
 * Returns 0, -EACCES for a bad or missing signature, -EALREADY for a signature
 * accepted before (a replayed message), -ENOMEM. With signing disabled, 0. */
int sign_accept(struct sign *s, const struct sign_part parts[4], const void *sig,
                size_t sig_len);

#endif
