/* fsutil: the file-system chores that several modules share: making a folder
 * with its parents (the worker's caches, a kernelspec, the font cache, the
 * client commands' runtime folder and `sandpit run --outdir`), reading and
 * writing a whole file by its path (through tfile: `sandpit run -f`, the
 * connection and state files, a kernelspec's files),
 * removing a tree that the kernel made (its private temporary folder), and
 * finding the user's Jupyter data folder (kernelspecs, the history).
 * Paths are borrowed; nothing here keeps memory. */
#ifndef SANDPIT_FSUTIL_H
#define SANDPIT_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p: makes path and the folders above it that are missing, each with
 * mode. 0 when path is a folder afterwards (made now or before), or -errno. */
int fsutil_mkdir_p(const char *path, mode_t mode);

/* rm -rf of a tree the kernel made, never following a symbolic link out of it
 * (the sandboxed code can put links in it): tfile_remove_path, on descriptors.
 * Errors are ignored: what cannot be removed stays. */
void fsutil_remove_tree(const char *path);

/* Writes len bytes of buf as the file at path, whole or not at all: made under
 * a fresh name in its folder and moved into place over what was there
 * (tfile_write with TFILE_REPLACE: a link at path is replaced, never followed).
 * The folder is opened by its path, as the user or sandpit named it. mode as
 * for open (the umask applies). 0 or -errno. */
int fsutil_write_file(const char *path, const void *buf, size_t len, mode_t mode);

/* Reads the regular file at path, whole, if it holds at most max bytes
 * (tfile_read beneath its folder: a link at path is refused with -ELOOP, a
 * FIFO or a device with -TFILE_EKIND, never opened so that it could block).
 * 0 with *out new (caller frees; a 0 byte follows the *len bytes), or -errno
 * with *out NULL. */
int fsutil_read_file(const char *path, size_t max, char **out, size_t *len);

/* The user's Jupyter data folder, as jupyter_core finds it: JUPYTER_DATA_DIR,
 * else XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter. 0, -ENOENT (no
 * HOME) or -ENAMETOOLONG. */
int fsutil_jupyter_data_dir(char *out, size_t len);

#endif
