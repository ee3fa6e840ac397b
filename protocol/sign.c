/* sign: HMAC-SHA256 (RFC 2104) on OpenSSL's SHA-256.
 *
 * The key is fixed for the life of a kernel, so the hash states after its
 * inner and outer pads are made once, at start-up; each message copies them
 * (two structures of 112 bytes) and costs the hashing of its own bytes and
 * one more block, no allocation. OpenSSL's SHA256_* functions are used
 * rather than its EVP_MAC: HMAC through EVP fetches the algorithm from a
 * provider, which sets up OpenSSL's tables of every algorithm's names and
 * methods and touches about 1.2 MB of the library's pages in every kernel,
 * for one hash. Verification compares the digest bytes with CRYPTO_memcmp,
 * so the time it takes does not tell an attacker how much of a forged
 * signature was right.
 *
 * A good signature is not enough: someone who can watch the wire could send a
 * captured request again and run its code twice. So the signer remembers the
 * digests it accepted, in two generations of an open-addressed set (the older one
 * is emptied when the newer fills up): memory stays bounded, a lookup costs a
 * probe or two, and at least SIGN_HISTORY of the latest messages are refused a
 * second time. Half a digest (128 bits) is kept: as unforgeable as the whole. */
/* SHA256_Init and its siblings are deprecated in OpenSSL 3 in favour of EVP,
 * whose cost is the point above; they are still part of its API. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "protocol/sign.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_LEN 32
#define BLOCK_LEN  64                 /* SHA-256's block: the length of HMAC's pads */
#define SEEN_KEY   16                 /* bytes of a digest that are kept */
#define SEEN_SLOTS (2 * SIGN_HISTORY) /* per generation: at most half full */

_Static_assert((SEEN_SLOTS & (SEEN_SLOTS - 1)) == 0, "SEEN_SLOTS is a power of two");

_Static_assert(DIGEST_LEN == SHA256_DIGEST_LENGTH, "SHA-256 digests are 32 bytes");
_Static_assert(BLOCK_LEN == SHA256_CBLOCK, "SHA-256 blocks are 64 bytes");

/* The hash states after the key's inner and outer pads. */
struct sign_key {
    SHA256_CTX inner, outer;
};

struct sign_seen {
    unsigned char (*gen[2])[SEEN_KEY]; /* SEEN_SLOTS keys each; all zero: empty */
    size_t count[2];
    int cur; /* the generation that takes new keys */
};

static void seen_free(struct sign_seen *h)
{
    if (!h)
        return;
    free(h->gen[0]);
    free(h->gen[1]);
    free(h);
}

static struct sign_seen *seen_new(void)
{
    struct sign_seen *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    /* Written now, so that the kernel's memory does not creep up as the tables fill:
     * 1 MiB from the first message on, and not a page more. */
    for (int i = 0; i < 2; i++) {
        if (!(h->gen[i] = malloc((size_t)SEEN_SLOTS * SEEN_KEY))) {
            seen_free(h);
            return NULL;
        }
        memset(h->gen[i], 0, (size_t)SEEN_SLOTS * SEEN_KEY);
    }
    return h;
}

/* The slot that holds key in one generation, or the empty slot where it would go. */
static unsigned char *seen_slot(unsigned char (*gen)[SEEN_KEY], const unsigned char *key)
{
    /* The key is an HMAC output: any four of its bytes are a uniform hash. */
    uint32_t i = (uint32_t)key[0] | (uint32_t)key[1] << 8 | (uint32_t)key[2] << 16 |
                 (uint32_t)key[3] << 24;
    static const unsigned char empty[SEEN_KEY];
    for (;; i++) {
        unsigned char *slot = gen[i & (SEEN_SLOTS - 1)];
        if (memcmp(slot, key, SEEN_KEY) == 0 || memcmp(slot, empty, SEEN_KEY) == 0)
            return slot;
    }
}

/* Adds the digest; false if it was there already. */
static bool seen_add(struct sign_seen *h, const unsigned char digest[DIGEST_LEN])
{
    unsigned char key[SEEN_KEY];
    memcpy(key, digest, SEEN_KEY);
    static const unsigned char empty[SEEN_KEY];
    if (memcmp(key, empty, SEEN_KEY) == 0)
        key[0] = 1; /* all zero marks an empty slot */
    if (memcmp(seen_slot(h->gen[h->cur ^ 1], key), key, SEEN_KEY) == 0)
        return false;
    unsigned char *slot = seen_slot(h->gen[h->cur], key);
    if (memcmp(slot, key, SEEN_KEY) == 0)
        return false;
    memcpy(slot, key, SEEN_KEY);
    if (++h->count[h->cur] == SIGN_HISTORY) {
        h->cur ^= 1;
        memset(h->gen[h->cur], 0, (size_t)SEEN_SLOTS * SEEN_KEY);
        h->count[h->cur] = 0;
    }
    return true;
}

int sign_init(struct sign *s, const char *scheme, const unsigned char *key,
              size_t key_len)
{
    memset(s, 0, sizeof *s);
    if (scheme && *scheme && strcmp(scheme, "hmac-sha256") != 0)
        return -EINVAL;
    if (key_len == 0)
        return 0;
    struct sign_key *k = malloc(sizeof *k);
    if (!k)
        return -ENOMEM;
    /* A key longer than a block is replaced by its digest (RFC 2104, 2). */
    unsigned char block[BLOCK_LEN] = {0}, pad[BLOCK_LEN];
    int ok = 1;
    if (key_len > BLOCK_LEN) {
        /* Not SHA256(), which OpenSSL 3 runs through EVP. */
        SHA256_CTX c;
        ok &= SHA256_Init(&c) & SHA256_Update(&c, key, key_len) & SHA256_Final(block, &c);
        OPENSSL_cleanse(&c, sizeof c);
    } else {
        memcpy(block, key, key_len);
    }
    for (int i = 0; i < BLOCK_LEN; i++)
        pad[i] = block[i] ^ 0x36;
    ok &= SHA256_Init(&k->inner) & SHA256_Update(&k->inner, pad, BLOCK_LEN);
    for (int i = 0; i < BLOCK_LEN; i++)
        pad[i] = block[i] ^ 0x5c;
    ok &= SHA256_Init(&k->outer) & SHA256_Update(&k->outer, pad, BLOCK_LEN);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    if (!ok) {
        OPENSSL_cleanse(k, sizeof *k);
        free(k);
        return -EINVAL;
    }
    s->mac = k;
    s->enabled = true;
    return 0;
}

void sign_release(struct sign *s)
{
    if (s->mac) {
        OPENSSL_cleanse(s->mac, sizeof(struct sign_key));
        free(s->mac);
    }
    seen_free(s->seen);
    memset(s, 0, sizeof *s);
}

static int digest(const struct sign *s, const struct sign_part parts[4],
                  unsigned char out[DIGEST_LEN])
{
    const struct sign_key *k = s->mac;
    SHA256_CTX c = k->inner;
    unsigned char inner[DIGEST_LEN];
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= SHA256_Update(&c, parts[i].data, parts[i].len);
    ok &= SHA256_Final(inner, &c);
    c = k->outer;
    ok &= SHA256_Update(&c, inner, DIGEST_LEN) & SHA256_Final(out, &c);
    OPENSSL_cleanse(&c, sizeof c);
    return ok ? 0 : -EIO;
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

/* Lower-case hex only: "A" is not a digit of the form clients send. */
static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The digest that sig spells, or false if it is not SIGN_HEX_LEN lower-case digits. */
static bool parse_hex(const void *sig, size_t sig_len, unsigned char out[DIGEST_LEN])
{
    if (sig_len != SIGN_HEX_LEN)
        return false;
    const unsigned char *h = sig;
    for (int i = 0; i < DIGEST_LEN; i++) {
        int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

/* 0 with the digest in want if sig is the parts' signature; -EACCES otherwise. */
static int check(const struct sign *s, const struct sign_part parts[4], const void *sig,
                 size_t sig_len, unsigned char want[DIGEST_LEN])
{
    unsigned char got[DIGEST_LEN];
    if (!parse_hex(sig, sig_len, got) || digest(s, parts, want) != 0)
        return -EACCES;
    return CRYPTO_memcmp(want, got, DIGEST_LEN) == 0 ? 0 : -EACCES;
}

bool sign_verify(const struct sign *s, const struct sign_part parts[4], const void *sig,
                 size_t sig_len)
{
    unsigned char want[DIGEST_LEN];
    return !s->enabled || check(s, parts, sig, sig_len, want) == 0;
}

int sign_accept(struct sign *s, const struct sign_part parts[4], const void *sig,
                size_t sig_len)
{
    if (!s->enabled)
        return 0;
    unsigned char want[DIGEST_LEN];
    int rc = check(s, parts, sig, sig_len, want);
    if (rc)
        return rc;
    if (!s->seen && !(s->seen = seen_new()))
        return -ENOMEM;
    return seen_add(s->seen, want) ? 0 : -EALREADY;
}
