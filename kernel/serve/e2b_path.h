/* e2b_path: a path as an E2B client names it, mapped to one beneath the
 * workspace. E2B's sandboxes run as the user "user" whose home is
 * /home/user, and its SDKs' users write "/home/user/data.csv", "data.csv"
 * (envd resolves it in the home) or "~/data.csv"; here the home is the
 * server's workspace. What comes out is a relative path of plain components
 * ("a/b/c", or "" for the workspace itself) for sandbox/tfile.h to resolve
 * beneath the workspace's descriptor, never following a link; what cannot be
 * mapped (an absolute path elsewhere, "..", a NUL byte, an empty path, a
 * component longer than NAME_MAX) is refused here with a sentence, before
 * any file is touched. Pure: strings in, a string out; no I/O. */
#ifndef SANDPIT_SERVE_E2B_PATH_H
#define SANDPIT_SERVE_E2B_PATH_H

#include <stddef.h>

#define E2B_PATH_HOME "/home/user"
#define E2B_PATH_MAX  4096 /* bytes of a path, as given and as mapped */

/* Maps the len bytes of in (not NUL-terminated; a NUL inside is refused)
 * into rel (rellen bytes, E2B_PATH_MAX + 1 is enough): "." components and
 * repeated slashes dropped. 0, or -EINVAL with *why (static) set. */
int e2b_path_map(const char *in, size_t len, char *rel, size_t rellen, const char **why);

/* The path as the client sees it, E2B_PATH_HOME "/" rel (E2B_PATH_HOME for
 * ""), into out. 0, or -ENAMETOOLONG. */
int e2b_path_client(const char *rel, char *out, size_t outlen);

/* The last component of rel (borrowed, inside rel); "" for "". */
const char *e2b_path_name(const char *rel);

#endif
