/* e2b_path: E2B's paths beneath the workspace (e2b_path.h).
 *
 * The mapping is textual and strict on purpose: ".." is refused rather than
 * resolved, because resolving it needs the file system (a component may be
 * a link) and tfile refuses it anyway; "." and empty components carry no
 * meaning and go. */
#include "kernel/serve/e2b_path.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The part of in that lies beneath the home: in without its "/home/user"
 * or "~" prefix, or NULL for an absolute path elsewhere. */
static const char *beneath_home(const char *in, size_t len, size_t *rest)
{
    static const char home[] = E2B_PATH_HOME;
    size_t hl = sizeof home - 1, skip = 0;
    if (len >= hl && memcmp(in, home, hl) == 0 && (len == hl || in[hl] == '/'))
        skip = hl;
    else if (in[0] == '~' && (len == 1 || in[1] == '/'))
        skip = 1;
    else if (in[0] == '/')
        return NULL;
    *rest = len - skip;
    return in + skip;
}

int e2b_path_map(const char *in, size_t len, char *rel, size_t rellen, const char **why)
{
    size_t rest = 0, o = 0;
    const char *p = NULL;
    *why = NULL;
    if (!rellen)
        *why = "no room for the path";
    else if (!len)
        *why = "the path is empty";
    else if (memchr(in, 0, len))
        *why = "the path holds a NUL byte";
    else if (len > E2B_PATH_MAX)
        *why = "the path is too long";
    else if (!(p = beneath_home(in, len, &rest)))
        *why = "an absolute path must be under " E2B_PATH_HOME;
    if (*why)
        return -EINVAL;
    for (size_t i = 0; i < rest;) {
        size_t n = 0;
        while (i + n < rest && p[i + n] != '/')
            n++;
        if (n == 2 && p[i] == '.' && p[i + 1] == '.')
            *why = "the path may not contain \"..\"";
        else if (n > NAME_MAX)
            *why = "a component of the path is too long";
        else if (n && !(n == 1 && p[i] == '.') && o + (o ? 1 : 0) + n >= rellen)
            *why = "the path is too long";
        if (*why)
            return -EINVAL;
        if (n && !(n == 1 && p[i] == '.')) {
            if (o)
                rel[o++] = '/';
            memcpy(rel + o, p + i, n);
            o += n;
        }
        i += n + 1;
    }
    rel[o] = 0;
    return 0;
}

int e2b_path_client(const char *rel, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s%s%s", E2B_PATH_HOME, *rel ? "/" : "", rel);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

const char *e2b_path_name(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? slash + 1 : rel;
}
