/* auth: the token and the Origin (auth.h).
 *
 * The comparison must not say how much of a guess was right: the header's
 * token and the server's are compared with CRYPTO_memcmp over the server's
 * length, and a guess of another length fails before any byte is looked at
 * (which tells only the length, as Jupyter's own check does). */
#include "kernel/serve/auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

int auth_token_generate(char *out, size_t len)
{
    unsigned char r[AUTH_TOKEN_HEX / 2];
    if (len < AUTH_TOKEN_HEX + 1)
        return -ENOSPC;
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -errno;
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    return 0;
}

bool auth_token_valid(const char *token)
{
    size_t n = token ? strlen(token) : 0;
    if (n < 1 || n > AUTH_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (token[i] <= ' ' || token[i] > '~')
            return false;
    return true;
}

static bool same_token(const char *token, const char *given, size_t len)
{
    size_t n = strlen(token);
    return n > 0 && len == n && CRYPTO_memcmp(token, given, n) == 0;
}

/* The credentials of an Authorization value of the scheme "token" or
 * "Bearer" (either case), spaces around trimmed; NULL for another. */
static const char *header_credentials(const char *v, size_t *len)
{
    while (*v == ' ')
        v++;
    size_t skip = strncasecmp(v, "token ", 6) == 0    ? 6
                  : strncasecmp(v, "bearer ", 7) == 0 ? 7
                                                      : 0;
    if (!skip)
        return NULL;
    v += skip;
    while (*v == ' ')
        v++;
    size_t n = strlen(v);
    while (n && v[n - 1] == ' ')
        n--;
    *len = n;
    return v;
}

bool auth_request_ok(const char *token, const char *authorization,
                     const char *query_token)
{
    if (!token || !*token)
        return false;
    size_t len = 0;
    const char *cred = authorization ? header_credentials(authorization, &len) : NULL;
    if (cred && same_token(token, cred, len))
        return true;
    return query_token && same_token(token, query_token, strlen(query_token));
}

bool auth_origin_ok(const char *origin, const char *host, const char *allow_origin)
{
    if (!origin)
        return true;
    if (allow_origin &&
        (strcmp(allow_origin, "*") == 0 || strcmp(allow_origin, origin) == 0))
        return true;
    const char *sep = strstr(origin, "://");
    if (!host || !*host || !sep)
        return false;
    const char *scheme_end = sep;
    size_t slen = (size_t)(scheme_end - origin);
    if (!((slen == 4 && strncasecmp(origin, "http", 4) == 0) ||
          (slen == 5 && strncasecmp(origin, "https", 5) == 0)))
        return false;
    return strcasecmp(sep + 3, host) == 0;
}

bool auth_secret_valid(const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    if (n < AUTH_SECRET_MIN || n > AUTH_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = secret[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~'))
            return false;
    }
    return true;
}

int auth_e2b_path(const char *secret, const char *path, const char **rest)
{
    static const char prefix[] = AUTH_E2B_PREFIX;
    size_t plen = sizeof prefix - 1;
    if (strncmp(path, prefix, plen) != 0 && strcmp(path, "/e2b") != 0)
        return 0;
    if (strlen(path) <= plen)
        return -1;
    const char *given = path + plen, *slash = strchr(given, '/');
    size_t len = slash ? (size_t)(slash - given) : strlen(given);
    if (!secret || !auth_secret_valid(secret) || !same_token(secret, given, len))
        return -1;
    *rest = given + len;
    return 1;
}
