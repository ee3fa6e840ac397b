/* masks: the mounts that keep the user's setup out of a cell's reach (home.h says what
 * is masked; this file says how), in the worker's mount namespace.
 *
 * A mount point cannot be renamed, moved onto or removed from its own namespace
 * (EBUSY), which is what makes a mask hold: a path bound read-only, or covered, stays
 * where it is for the worker's life. But a folder above it can be renamed, and what
 * it holds goes with it: after os.rename("sub", "sub2") the connection file that was
 * covered at sub/kernel.json lies open at sub2/kernel.json for the next worker, and a
 * read-only lib/ moved away makes room for a new one the cell fills. So each folder
 * between a read-write path and a masked path inside it is pinned: bound on itself,
 * writable as before, but no longer renamable. The price: a cell cannot rename or
 * remove a folder that holds a masked path.
 */
#include "sandbox/internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define HOME_MAX_ENTRIES 1024
#define PINS_MAX         512

/* The top of a home folder inside the workspace: read-only, but for each entry that is
 * not a dot-file, bound on itself so that it stays writable. Nothing can then make a
 * new ~/.bash_profile or ~/.local, nor change those there. Returns the number of
 * entries kept writable, or -errno. */
static int lock_home(const char *home, struct sandbox_layer *mnt)
{
    if (mount(home, home, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -errno;
    DIR *d = opendir(home);
    if (!d)
        return -errno;
    int kept = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        struct stat st;
        if (e->d_name[0] == '.' ||
            snprintf(path, sizeof path, "%s/%s", home, e->d_name) >= (int)sizeof path ||
            lstat(path, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
            continue; /* a symbolic link leads elsewhere: Landlock judges its target */
        if (kept == HOME_MAX_ENTRIES) {
            sandbox__layer_note(mnt, "only %d entries at the top of %s stay writable",
                                HOME_MAX_ENTRIES, home);
            break;
        }
        if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) == 0)
            kept++;
    }
    closedir(d);
    int rc = sandbox__mount_rdonly(home, true, false);
    return rc < 0 ? rc : kept;
}

/* The read-write path of p that path lies strictly beneath, or NULL. */
static const char *rw_root(const struct sandbox_policy *p, const char *path)
{
    const char *roots[2] = {p->workspace, p->tmpdir};
    for (int i = 0; i < 2; i++) {
        size_t n = roots[i] ? strlen(roots[i]) : 0;
        if (n > 1 && strncmp(path, roots[i], n) == 0 && path[n] == '/')
            return roots[i];
    }
    for (const char *const *s = p->rw_paths; s && *s; s++) {
        size_t n = strlen(*s);
        if (n > 1 && strncmp(path, *s, n) == 0 && path[n] == '/')
            return *s;
    }
    return NULL;
}

struct pins {
    char *v[PINS_MAX];
    size_t n;
    bool full;
};

/* Pins each folder between path's read-write root and path (both excluded). */
static void pin_above(struct pins *pins, const struct sandbox_policy *p, const char *path,
                      struct sandbox_layer *mnt)
{
    const char *root = rw_root(p, path);
    char dir[PATH_MAX];
    if (!root || snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return;
    for (char *s = dir + strlen(root) + 1; (s = strchr(s, '/')); *s++ = '/') {
        *s = 0;
        bool seen = false;
        for (size_t i = 0; i < pins->n && !seen; i++)
            seen = strcmp(pins->v[i], dir) == 0;
        if (seen)
            continue;
        if (pins->n == PINS_MAX || !(pins->v[pins->n] = strdup(dir))) {
            if (!pins->full)
                sandbox__layer_note(mnt, "only %d folders above masked paths are pinned",
                                    PINS_MAX);
            pins->full = true;
            return;
        }
        pins->n++;
        if (mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) < 0)
            sandbox__layer_note(mnt, "cannot pin %s: %s", dir, strerror(errno));
    }
}

void sandbox__masks_mount(const struct sandbox_policy *p, struct sandbox_layer *mnt,
                          char *masked, char *locked, size_t size)
{
    for (const char *const *h = p->home_dirs; h && *h; h++) {
        int kept = lock_home(*h, mnt);
        if (kept < 0)
            sandbox__layer_note(mnt, "cannot lock the top of %s: %s", *h,
                                strerror(-kept));
        else
            sandbox__list_path(locked, size, *h, p->workspace);
    }
    /* After the homes' locks, so that a pin in a home's read-only part stays so. */
    struct pins pins = {.n = 0};
    for (const char *const *r = p->readonly_paths; r && *r; r++)
        pin_above(&pins, p, *r, mnt);
    for (const char *const *h = p->hidden_paths; h && *h; h++)
        pin_above(&pins, p, *h, mnt);
    for (size_t i = 0; i < pins.n; i++)
        free(pins.v[i]);
    for (const char *const *r = p->readonly_paths; r && *r; r++) {
        int m = mount(*r, *r, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
        if (m == 0)
            m = sandbox__mount_rdonly(*r, true, true);
        if (m < 0)
            sandbox__layer_note(mnt, "cannot make %s read-only: %s", *r, strerror(-m));
        else
            sandbox__list_path(masked, size, *r, p->workspace);
    }
}
