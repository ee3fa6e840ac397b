/* tmpdir: the kernel's private folders, in the user's folder of them,
 * TMPDIR/sandpit-user-<uid> (mode 0700; every worker has it hidden but for
 * its own temporary folder), each owner only and named for the kernel's pid,
 * so that they go with the kernel: the temporary folder,
 * BASE/sandpit-<pid>-XXXXXXXX, which the worker gets read-write; the
 * supervisor's own, BASE/sandpit-<pid>-<what>-XXXXXXXX, which the worker
 * never gets (the connection file that Enterprise Gateway's kernel writes);
 * and the removal of such folders that killed kernels left behind.
 * The paths returned are new (caller frees). */
#ifndef SANDPIT_TMPDIR_H
#define SANDPIT_TMPDIR_H

#include <stddef.h>

/* Opens the user's folder of private folders, making it if missing: a folder
 * of this user's, mode 0700, never a link (TMPDIR's, else /tmp's, else
 * XDG_RUNTIME_DIR's). Its path in out; the descriptor (caller closes), or
 * -errno. */
int tmpdir_base(char *out, size_t len);

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
