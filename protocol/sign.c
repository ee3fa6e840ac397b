/* sign: HMAC-SHA256 through OpenSSL 3's EVP_MAC.
 *
 * The keyed context is made once at start-up; each message duplicates it, which
 * is cheaper than fetching the digest and setting the key again. Verification
 * compares the digest bytes with CRYPTO_memcmp, so the time it takes does not
 * tell an attacker how much of a forged signature was right. */
#include "protocol/sign.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <string.h>

#define DIGEST_LEN 32

int sign_init(struct sign *s, const char *scheme, const unsigned char *key,
              size_t key_len)
{
    memset(s, 0, sizeof *s);
    if (scheme && *scheme && strcmp(scheme, "hmac-sha256") != 0)
        return -EINVAL;
    if (key_len == 0)
        return 0;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!mac)
        return -ENOMEM;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (!ctx)
        return -ENOMEM;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (!EVP_MAC_init(ctx, key, key_len, params)) {
        EVP_MAC_CTX_free(ctx);
        return -EINVAL;
    }
    s->mac = ctx;
    s->enabled = true;
    return 0;
}

void sign_release(struct sign *s)
{
    EVP_MAC_CTX_free(s->mac);
    memset(s, 0, sizeof *s);
}

static int digest(const struct sign *s, const struct sign_part parts[4],
                  unsigned char out[DIGEST_LEN])
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(s->mac);
    if (!ctx)
        return -ENOMEM;
    int rc = -EIO;
    for (int i = 0; i < 4; i++)
        if (!EVP_MAC_update(ctx, parts[i].data, parts[i].len))
            goto out;
    size_t len = 0;
    if (!EVP_MAC_final(ctx, out, &len, DIGEST_LEN) || len != DIGEST_LEN)
        goto out;
    rc = 0;
out:
    EVP_MAC_CTX_free(ctx);
    return rc;
}

int sign_compute(const struct sign *s, const struct sign_part parts[4], char *hex)
{
    static const char digits[] = "0123456789abcdef";
    hex[0] = 0;
    if (!s->enabled)
        return 0;
    unsigned char d[DIGEST_LEN];
    int rc = digest(s, parts, d);
    if (rc)
        return rc;
    for (int i = 0; i < DIGEST_LEN; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[SIGN_HEX_LEN] = 0;
    return 0;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool sign_verify(const struct sign *s, const struct sign_part parts[4], const void *sig,
                 size_t sig_len)
{
    if (!s->enabled)
        return true;
    if (sig_len != SIGN_HEX_LEN)
        return false;
    unsigned char want[DIGEST_LEN], got[DIGEST_LEN];
    const unsigned char *h = sig;
    bool well_formed = true;
    for (int i = 0; i < DIGEST_LEN; i++) {
        int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
        well_formed &= hi >= 0 && lo >= 0;
        got[i] = (unsigned char)((hi & 15) << 4 | (lo & 15));
    }
    if (digest(s, parts, want) != 0)
        return false;
    return CRYPTO_memcmp(want, got, DIGEST_LEN) == 0 && well_formed;
}
