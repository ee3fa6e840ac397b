/* fsutil: the file-system chores that several modules share: making a folder
 * with its parents (the worker's caches, a kernelspec, the font cache, the
 * client commands' runtime folder and `sandpit run --outdir`),
 * removing a tree that the kernel made (its private temporary folder), and
 * finding the user's Jupyter data folder (kernelspecs, the history).
 * Paths are borrowed; nothing here keeps memory. */
#ifndef SANDPIT_FSUTIL_H
#define SANDPIT_FSUTIL_H

#include <sys/types.h>

/* mkdir -p: makes path and the folders above it that are missing, each with
 * mode. 0 when path is a folder afterwards (made now or before), or -errno. */
int fsutil_mkdir_p(const char *path, mode_t mode);

/* rm -rf of a tree the kernel made, never following a symbolic link out of it
 * (the sandboxed code can put links in it): tfile_remove_path, on descriptors.
 * Errors are ignored: what cannot be removed stays. */
void fsutil_remove_tree(const char *path);

/* The user's Jupyter data folder, as jupyter_core finds it: JUPYTER_DATA_DIR,
 * else XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter. 0, -ENOENT (no
 * HOME) or -ENAMETOOLONG. */
int fsutil_jupyter_data_dir(char *out, size_t len);

#endif
