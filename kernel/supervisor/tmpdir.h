/* tmpdir: the kernel's private temporary folder, TMPDIR/sandpit-<pid>-XXXXXX
 * (or /tmp's), which the worker gets read-write and which goes with the
 * kernel; and the removal of such folders that killed kernels left behind.
 * The path returned is new (caller frees). */
#ifndef SANDPIT_TMPDIR_H
#define SANDPIT_TMPDIR_H

/* Makes the folder (owner only) and removes stale ones of this user beside it.
 * 0 with *path new, or -errno. */
int tmpdir_make(char **path);

/* Removes the folder and what the worker left in it. */
void tmpdir_remove(const char *path);

#endif
