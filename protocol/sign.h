/* sign: HMAC-SHA256 signatures of Jupyter messages.
 * Used by msg on every message in (verify) and out (compute). The signer keeps
 * a keyed MAC context made once; an empty key means messages are not signed. */
#ifndef SANDPIT_SIGN_H
#define SANDPIT_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#define SIGN_HEX_LEN 64 /* hex digits of an HMAC-SHA256 digest */

struct sign_part {
    const void *data;
    size_t len;
};

struct sign {
    bool enabled;
    void *mac; /* EVP_MAC_CTX *, keyed */
};

/* Keys the signer (the key is copied into OpenSSL's context). An empty key
 * disables signing. Returns 0, -EINVAL for an unknown scheme, -ENOMEM. */
int sign_init(struct sign *s, const char *scheme, const unsigned char *key,
              size_t key_len);
void sign_release(struct sign *s);

/* Computes the hex signature of the parts (header, parent, metadata, content)
 * into hex, which must hold SIGN_HEX_LEN + 1 bytes. With signing disabled it
 * writes "". Returns 0 or -EIO. */
int sign_compute(const struct sign *s, const struct sign_part parts[4], char *hex);

/* True if sig (not NUL-terminated) is the signature of the parts, compared in
 * constant time. With signing disabled, every signature is accepted. */
bool sign_verify(const struct sign *s, const struct sign_part parts[4], const void *sig,
                 size_t sig_len);

#endif
