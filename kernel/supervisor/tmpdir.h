/* tmpdir: the kernel's private folders in TMPDIR (or /tmp), each owner only and
 * named for the kernel's pid, so that they go with the kernel: the temporary
 * folder, TMPDIR/sandpit-<pid>-XXXXXX, which the worker gets read-write; the
 * supervisor's own, TMPDIR/sandpit-<pid>-<what>-XXXXXX, which the worker
 * never gets (the connection file that Enterprise Gateway's kernel writes);
 * and the removal of such folders that killed kernels left behind.
 * The paths returned are new (caller frees). */
#ifndef SANDPIT_TMPDIR_H
#define SANDPIT_TMPDIR_H

/* Makes the temporary folder (mode 0700) and removes stale folders of this
 * user beside it, the supervisor's own included. 0 with *path new, or -errno. */
int tmpdir_make(char **path);

/* Makes a folder of the supervisor's own (mode 0700), what (letters only)
 * naming its use. Nothing gives it to the worker: out of the temporary
 * folder, it is out of the worker's reach as the rest of TMPDIR is. 0 with
 * *path new, or -errno. */
int tmpdir_make_private(const char *what, char **path);

/* Removes the folder and what the worker left in it. */
void tmpdir_remove(const char *path);

#endif
