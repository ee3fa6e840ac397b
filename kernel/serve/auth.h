/* auth: who may use the server. A request carries the server's token as
 * "Authorization: token T", "Authorization: Bearer T" or ?token=T, and it
 * is compared in constant time; a WebSocket upgrade from a browser page of
 * another site is refused by its Origin unless --allow-origin names it.
 * Pure: strings in, a verdict out; nothing here logs the token. */
#ifndef SANDPIT_SERVE_AUTH_H
#define SANDPIT_SERVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_TOKEN_HEX 48 /* a generated token: 24 random bytes in hex */
#define AUTH_TOKEN_MAX 256

/* A new random token into out (at least AUTH_TOKEN_HEX + 1 bytes). 0 or -errno. */
int auth_token_generate(char *out, size_t len);

/* Whether a token is one the server may use: 1 to AUTH_TOKEN_MAX printable
 * ASCII characters, no space. */
bool auth_token_valid(const char *token);

/* Whether the request presents token: authorization (the header's value,
 * NULL when absent) or query_token (the ?token= value, NULL when absent). */
bool auth_request_ok(const char *token, const char *authorization,
                     const char *query_token);

/* Whether a WebSocket upgrade with origin (NULL: no Origin header, a client
 * that is not a browser) to host (the Host header) may go on: no Origin, the
 * same host and port, or allow_origin ("*" or an exact origin; NULL: none). */
bool auth_origin_ok(const char *origin, const char *host, const char *allow_origin);

/* The E2B prefix: E2B's SDK in its local mode sends no token, but keeps the
 * path of E2B_SANDBOX_URL, so its requests carry a secret in their path,
 * /e2b/<secret>/... . */
#define AUTH_E2B_PREFIX "/e2b/"
#define AUTH_SECRET_MIN 16

/* Whether secret may be the E2B prefix's: AUTH_SECRET_MIN to AUTH_TOKEN_MAX
 * characters that need no escaping in a path (letters, digits, "-._~"). */
bool auth_secret_valid(const char *secret);

/* Whether path (decoded, without its query) is under the E2B prefix: 0 when
 * it is not; 1 when it is and presents secret (compared in constant time),
 * with *rest pointing into path at what follows the secret (a "/..." or "");
 * -1 when it is under the prefix with another secret, or none. */
int auth_e2b_path(const char *secret, const char *path, const char **rest);

#endif
