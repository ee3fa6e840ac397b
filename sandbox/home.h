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
    char **hidden;   /* secret: covered by an empty folder or file, wherever they are;
                      * with every dot-entry at the top of a home in `homes` that the
                      * code does not need, and every connection file found in the
                      * workspace */
    char **readonly; /* inside a read-write path: bound read-only */
    char **homes;    /* home folders inside a read-write path: their top level is
                      * read-only but for its entries that are not dot-files */
    char **skipped;  /* would have been masked, but hold a read-write path */
    char **made;     /* missing protected paths made empty (with create) */
    bool scan_cut;   /* the search for connection files stopped at its bound */
    char why[512];   /* when the build fails with -ELOOP or another refusal: why */
};

/* Fills m (each list NULL-terminated, possibly NULL) for the read-write paths of p, from
 * envp (HOME, JUPYTER_*, XDG_*, IPYTHONDIR, PYTHONSTARTUP, PYTHONUSERBASE, PYTHONPATH,
 * PATH), the password database and p's ro_paths (read-only where they lie in a
 * read-write path). Paths are listed by their real path. With create (the worker, before
 * it is confined), a protected path named by the environment that is missing inside a
 * read-write path is made empty first (sandbox_resolve), so that no cell can make it;
 * without, only paths that exist are listed. Returns 0, -ENOMEM, or -ELOOP when such a
 * path is reached through a symbolic link that a cell could turn (m->why says which);
 * m is then empty but for m->why. */
int sandbox_masks_build(struct sandbox_masks *m, const struct sandbox_policy *p,
                        char *const envp[], bool create);
void sandbox_masks_release(struct sandbox_masks *m);

/* What sandbox_resolve makes of a missing path: nothing, a folder or an empty file. */
enum sandbox_kind {
    SANDBOX_KIND_ANY,  /* only resolve: -ENOENT if missing */
    SANDBOX_KIND_DIR,  /* make missing folders (0700) */
    SANDBOX_KIND_FILE, /* make missing folders, and the last component an empty file */
};

/* The real path of path (absolute) into out, walked one component at a time from "/"
 * without following a link by path (resolve.c). Symbolic links are followed where a cell
 * cannot write (outside p's read-write paths, the top of a home in homes and its
 * dot-entries); one inside them gives -ELOOP. A missing component gives -ENOENT, unless
 * kind says to make it and it lies where a cell could: then it is made, empty, with
 * mkdirat or openat(O_CREAT | O_EXCL | O_NOFOLLOW) in the folder just opened, and *made
 * is set. Returns 0 or -errno. */
int sandbox_resolve(const struct sandbox_policy *p, const char *const *homes,
                    const char *path, enum sandbox_kind kind, char *out, size_t len,
                    bool *made);

/* True if path is dir or lies beneath it (both real paths; "/" holds all). */
bool sandbox_path_beneath(const char *path, const char *dir);

/* True if path lies in a read-write path of p (workspace, tmpdir, rw_paths). */
bool sandbox_path_in_rw(const struct sandbox_policy *p, const char *path);

/* True if a cell could write in dir (a real path): it lies in a read-write path of p,
 * and is neither the top of a home in homes nor under a dot-entry there. */
bool sandbox_path_writable(const struct sandbox_policy *p, const char *const *homes,
                           const char *dir);

#endif
