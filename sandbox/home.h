/* home: the paths of the user's own setup that the worker must not change or read,
 * whatever its workspace: Jupyter's runtime folders (other kernels' connection files),
 * data and config folders (kernelspecs, jupyter_*_config), IPython's folder, shell and
 * Python start-up files, .ssh, .gnupg and the like. Built where the policy is built
 * (the worker, before stage 1) from the environment; the mount namespace applies it
 * (sandbox_policy's hidden_paths, readonly_paths and home_dirs).
 * Ownership: sandbox_masks owns its lists and strings; sandbox_masks_release frees them.
 */
#ifndef SANDPIT_SANDBOX_HOME_H
#define SANDPIT_SANDBOX_HOME_H

#include "sandbox/sandbox.h"

struct sandbox_masks {
    char **hidden;   /* secret: covered by an empty folder or file, wherever they are */
    char **readonly; /* inside a read-write path: bound read-only */
    char **homes;    /* home folders inside a read-write path: their top level is
                      * read-only but for its entries that are not dot-files */
    char **skipped;  /* would have been masked, but hold a read-write path */
};

/* Fills m (each list NULL-terminated, possibly NULL) for the read-write paths of p, from
 * envp (HOME, JUPYTER_*, XDG_*, IPYTHONDIR, PYTHONSTARTUP, PYTHONUSERBASE, PYTHONPATH),
 * the password database and p's ro_paths (read-only where they lie in a read-write path).
 * Only paths that exist are listed, by their real path. Returns 0 or -ENOMEM (m is then
 * empty). */
int sandbox_masks_build(struct sandbox_masks *m, const struct sandbox_policy *p,
                        char *const envp[]);
void sandbox_masks_release(struct sandbox_masks *m);

#endif
