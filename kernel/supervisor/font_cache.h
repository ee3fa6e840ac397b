/* font_cache: matplotlib's font list, kept across kernels. A worker's
 * matplotlib writes it into the private temporary folder, which goes with the
 * kernel; the supervisor keeps a copy in the user's cache folder
 * (~/.cache/sandpit/matplotlib). Paths are borrowed. */
#ifndef SANDPIT_FONT_CACHE_H
#define SANDPIT_FONT_CACHE_H

/* Copies the cached font list into tmpdir/matplotlib (which it makes). */
void font_cache_in(const char *tmpdir);

/* Copies tmpdir/matplotlib's font list into the cache, if it has none of that
 * name yet. */
void font_cache_out(const char *tmpdir);

#endif
