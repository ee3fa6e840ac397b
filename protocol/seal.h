/* seal: the connection info a kernel reports to Jupyter Enterprise Gateway,
 * sealed as the gateway's own kernel launchers seal it (their payload version 1).
 * Pure functions over OpenSSL and jansson; kernel/cmd/launcher.c sends what they make.
 * A seal_key is owned by its caller (seal_key_free); payloads are new strings. */
#ifndef SANDPIT_SEAL_H
#define SANDPIT_SEAL_H

#include <stddef.h>

/* The version the gateway reads in the payload: its launchers' format, which
 * the gateway compares with the integer 1 (not the gateway's or sandpit's
 * version). */
#define SEAL_VERSION 1
/* The gateway makes 1024-bit keys; smaller ones are refused as too weak. */
#define SEAL_MIN_KEY_BITS 1024

struct seal_key;

/* Reads the gateway's public key as the gateway passes it: the base64 of an RSA
 * public key in DER (X.509 SubjectPublicKeyInfo, the body of a PEM file without
 * its header, footer and line breaks; PKCS#1 RSAPublicKey is also accepted).
 * Whitespace is skipped. Returns 0 with *key new, or -EINVAL (-ENOMEM) with a
 * sentence in err saying what is wrong with it. */
int seal_key_parse(const char *text, struct seal_key **key, char *err, size_t errlen);
void seal_key_free(struct seal_key *key);

/* Seals len bytes of info (the connection info's JSON text): a fresh random
 * AES-128 key encrypts it in ECB mode with PKCS#7 padding to 16 bytes; the
 * public key encrypts the AES key (RSA, PKCS#1 v1.5 padding); both are base64
 * in {"version": 1, "key": ..., "conn_info": ...}, whose JSON text is base64
 * again: the payload, sent as it is. Returns the payload (new, NUL-terminated,
 * no line breaks; caller frees), or NULL with a sentence in err. */
char *seal_payload(const struct seal_key *key, const char *info, size_t len, char *err,
                   size_t errlen);

#endif
