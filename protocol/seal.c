/* seal: RSA and AES through OpenSSL's EVP interfaces, base64 and JSON.
 *
 * The format is the gateway's, read from its response manager (which decodes
 * base64, loads JSON, requires "version" == 1, decrypts "key" with its private
 * key under PKCS#1 v1.5, then "conn_info" with that AES key in ECB mode and
 * strips PKCS#7 padding) and from its Python launcher, which makes it. ECB and
 * PKCS#1 v1.5 are not what one would choose today; they are what the gateway
 * reads, and the only secret sealed is a connection's key, once.
 *
 * The AES key is wiped on every path; the plaintext is never copied (the
 * caller owns it and wipes it: it holds the connection's key). */
#include "protocol/seal.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/errbuf.h"

#define AES_KEY_LEN  16
#define AES_BLOCK    16
#define MAX_KEY_TEXT 16384 /* characters of a public key: an 8192-bit one is 1.5 KB */

struct seal_key {
    EVP_PKEY *pkey;
};

/* Decodes base64 text, skipping whitespace. Returns the bytes (new, *outlen of
 * them) or NULL when the text is not base64. */
static unsigned char *b64_decode(const char *text, size_t *outlen)
{
    size_t n = 0, len = strlen(text);
    char *clean = malloc(len + 1);
    unsigned char *out = NULL;
    if (!clean)
        return NULL;
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)text[i]))
            clean[n++] = text[i];
    clean[n] = 0;
    if (n == 0 || n % 4 != 0 || n > MAX_KEY_TEXT)
        goto out;
    size_t pad = (clean[n - 1] == '=') + (clean[n - 2] == '=');
    out = malloc(n / 4 * 3 + 1);
    int got = out ? EVP_DecodeBlock(out, (const unsigned char *)clean, (int)n) : -1;
    /* '=' anywhere but at the end is refused by EVP_DecodeBlock as not base64. */
    if (got < 0 || (size_t)got < pad) {
        free(out);
        out = NULL;
        goto out;
    }
    *outlen = (size_t)got - pad;
out:
    free(clean);
    return out;
}

/* base64 without line breaks, as Python's base64.b64encode writes it. New. */
static char *b64_encode(const unsigned char *data, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

/* The DER as SubjectPublicKeyInfo, else as PKCS#1 RSAPublicKey; every byte must
 * belong to the key. */
static EVP_PKEY *key_from_der(const unsigned char *der, size_t len)
{
    const unsigned char *p = der;
    EVP_PKEY *k = d2i_PUBKEY(NULL, &p, (long)len);
    if (k && p != der + len) {
        EVP_PKEY_free(k);
        k = NULL;
    }
    if (!k) {
        p = der;
        k = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, (long)len);
        if (k && p != der + len) {
            EVP_PKEY_free(k);
            k = NULL;
        }
    }
    ERR_clear_error();
    return k;
}

int seal_key_parse(const char *text, struct seal_key **key, char *err, size_t errlen)
{
    *key = NULL;
    size_t len = 0;
    unsigned char *der = b64_decode(text, &len);
    if (!der)
        return errbuf_set(-EINVAL, err, errlen,
                          "the gateway's public key is not base64 (it should be the "
                          "base64 of an RSA public key in DER)");
    EVP_PKEY *k = key_from_der(der, len);
    free(der);
    if (!k)
        return errbuf_set(-EINVAL, err, errlen,
                          "the gateway's public key is not an RSA public key in DER "
                          "(%zu bytes that are neither SubjectPublicKeyInfo nor PKCS#1)",
                          len);
    int rc = 0;
    if (EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
        rc = errbuf_set(-EINVAL, err, errlen,
                        "the gateway's public key is not an RSA key (the gateway "
                        "makes RSA keys)");
    } else if (EVP_PKEY_get_bits(k) < SEAL_MIN_KEY_BITS) {
        rc = errbuf_set(-EINVAL, err, errlen,
                        "the gateway's public key has %d bits: too weak (at least %d)",
                        EVP_PKEY_get_bits(k), SEAL_MIN_KEY_BITS);
    } else if (!(*key = malloc(sizeof **key))) {
        rc = -ENOMEM;
    }
    if (rc) {
        EVP_PKEY_free(k);
        return rc;
    }
    (*key)->pkey = k;
    return 0;
}

void seal_key_free(struct seal_key *key)
{
    if (!key)
        return;
    EVP_PKEY_free(key->pkey);
    free(key);
}

/* AES-128-ECB with OpenSSL's default padding, which is PKCS#7. New, *outlen. */
static unsigned char *aes_encrypt(const unsigned char aes_key[AES_KEY_LEN],
                                  const char *info, size_t len, size_t *outlen)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    unsigned char *out = malloc(len + AES_BLOCK);
    int n = 0, fin = 0;
    if (!c || !out || len > (size_t)INT32_MAX ||
        EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, aes_key, NULL) != 1 ||
        EVP_EncryptUpdate(c, out, &n, (const unsigned char *)info, (int)len) != 1 ||
        EVP_EncryptFinal_ex(c, out + n, &fin) != 1) {
        free(out);
        out = NULL;
    } else {
        *outlen = (size_t)n + (size_t)fin;
    }
    EVP_CIPHER_CTX_free(c);
    return out;
}

/* RSA with PKCS#1 v1.5 padding. New, *outlen. */
static unsigned char *rsa_encrypt(EVP_PKEY *pkey, const unsigned char *in, size_t len,
                                  size_t *outlen)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(pkey, NULL);
    unsigned char *out = NULL;
    size_t n = 0;
    if (c && EVP_PKEY_encrypt_init(c) == 1 &&
        EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PADDING) == 1 &&
        EVP_PKEY_encrypt(c, NULL, &n, in, len) == 1 && (out = malloc(n)) &&
        EVP_PKEY_encrypt(c, out, &n, in, len) == 1) {
        *outlen = n;
    } else {
        free(out);
        out = NULL;
    }
    EVP_PKEY_CTX_free(c);
    return out;
}

char *seal_payload(const struct seal_key *key, const char *info, size_t len, char *err,
                   size_t errlen)
{
    unsigned char aes_key[AES_KEY_LEN];
    unsigned char *sealed_info = NULL, *sealed_key = NULL;
    size_t info_len = 0, key_len = 0;
    char *info64 = NULL, *key64 = NULL, *text = NULL, *payload = NULL;
    json_t *doc = NULL;
    if (RAND_bytes(aes_key, sizeof aes_key) != 1) {
        errbuf_set(0, err, errlen,
                   "cannot make a random key to seal the connection info");
        goto out;
    }
    if (!(sealed_info = aes_encrypt(aes_key, info, len, &info_len)) ||
        !(sealed_key = rsa_encrypt(key->pkey, aes_key, sizeof aes_key, &key_len))) {
        errbuf_set(0, err, errlen, "cannot encrypt the connection info for the gateway");
        goto out;
    }
    if (!(info64 = b64_encode(sealed_info, info_len)) ||
        !(key64 = b64_encode(sealed_key, key_len)) ||
        !(doc = json_pack("{s:i, s:s, s:s}", "version", SEAL_VERSION, "key", key64,
                          "conn_info", info64)) ||
        !(text = json_dumps(doc, JSON_PRESERVE_ORDER)) ||
        !(payload = b64_encode((const unsigned char *)text, strlen(text))))
        errbuf_set(0, err, errlen, "out of memory sealing the connection info");
out:
    OPENSSL_cleanse(aes_key, sizeof aes_key);
    ERR_clear_error();
    free(sealed_info);
    free(sealed_key);
    free(info64);
    free(key64);
    free(text);
    json_decref(doc);
    return payload;
}
