/* font_cache: matplotlib's font list, kept across kernels of one workspace. A
 * worker's matplotlib writes it into the private temporary folder, which goes
 * with the kernel; the supervisor keeps a checked copy in the user's cache
 * folder (~/.cache/sandpit/matplotlib/<digest of the workspace's path>/).
 * Paths and texts are borrowed. */
#ifndef SANDPIT_FONT_CACHE_H
#define SANDPIT_FONT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* Copies the workspace's cached font lists into tmpdir/matplotlib (which it
 * makes), those that pass font_cache_valid. */
void font_cache_in(const char *tmpdir, const char *workspace);

/* Copies tmpdir/matplotlib's font lists that pass font_cache_valid into the
 * workspace's cache, those of a name it has none of yet. */
void font_cache_out(const char *tmpdir, const char *workspace);

/* True for a name matplotlib gives its list: fontlist-v<N>.json. */
bool font_cache_name(const char *name);

/* True if the len bytes of text are a font list of matplotlib's schema whose
 * every font is matplotlib's own (a relative fonts/ path) or a regular file
 * under /usr/share/fonts or /usr/local/share/fonts. */
bool font_cache_valid(const char *text, size_t len);

#endif
