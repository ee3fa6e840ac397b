/* private: the worker's view of the folders that hold kernels' private files.
 *
 * Every kernel of the user keeps its private folders (the worker's temporary
 * folder, the supervisor's own) in one folder of the user's, mode 0700
 * (kernel/supervisor/tmpdir.c). Mode bits do not keep out a worker running
 * as the same user, and a workspace can hold that folder (a kernel started in
 * /tmp), so in the worker's mount namespace the folder is covered by an empty
 * tmpfs, read-only, in which the worker's own temporary folder alone is bound
 * back: the worker sees no other kernel's folder, by name or by content, and
 * cannot plant anything beside its own.
 *
 * The temporary folder is the worker's to write, and what a cell leaves there
 * outlives the worker that wrote it (the next worker of the kernel starts in
 * the same folder), so the cover file made there is made by tfile: a fresh
 * random name, O_CREAT | O_EXCL, never opening a FIFO or following a link that
 * a cell planted. */
#include "sandbox/internal.h"
#include "sandbox/tfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

int sandbox_private_root(const char *parent, char *out, size_t len)
{
    if (!parent || parent[0] != '/')
        return -EINVAL;
    int n = snprintf(out, len, "%s/sandpit-user-%u", parent, (unsigned)getuid());
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *sandbox__cover_file(const struct sandbox_policy *p, char *buf, size_t len,
                                struct tfile_new *t)
{
    t->fd = t->dirfd = -1;
    if (!p->tmpdir)
        return NULL;
    int root = tfile_open_root(p->tmpdir);
    int rc = root < 0 ? root : tfile_create(root, "", 0, t);
    if (root >= 0)
        close(root);
    if (rc < 0)
        return NULL;
    if (snprintf(buf, len, "%s/%s", p->tmpdir, t->name) >= (int)len) {
        tfile_abort(t);
        return NULL;
    }
    return buf;
}

/* The last component of tmpdir if tmpdir is root/<one component>, else NULL. */
static const char *leaf_in(const char *root, const char *tmpdir)
{
    size_t n = strlen(root);
    if (!n || strncmp(tmpdir, root, n) != 0 || tmpdir[n] != '/')
        return NULL;
    const char *leaf = tmpdir + n + 1;
    return *leaf && !strchr(leaf, '/') && strcmp(leaf, "..") && strcmp(leaf, ".") ? leaf
                                                                                  : NULL;
}

int sandbox__hide_private_root(const struct sandbox_policy *p, struct sandbox_layer *mnt)
{
    const char *root = p->private_root;
    const char *leaf = root && p->tmpdir ? leaf_in(root, p->tmpdir) : NULL;
    if (!root)
        return 0;
    if (!leaf) {
        sandbox__layer_note(mnt, "cannot hide %s: %s is not a folder of it", root,
                            p->tmpdir ? p->tmpdir : "(no temporary folder)");
        return -EINVAL;
    }
    /* The temporary folder's mount (a bind, or a small tmpfs), taken aside first:
     * the cover hides what lies below it. */
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, p->tmpdir,
                            OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
    int rc = tree < 0 ? -errno : 0;
    char at[PATH_MAX];
    snprintf(at, sizeof at, "%s/%s", root, leaf);
    if (!rc && mount("none", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     "size=16k,nr_inodes=8,mode=0700") < 0)
        rc = -errno;
    if (!rc && mkdir(at, 0700) < 0)
        rc = -errno;
    if (!rc &&
        syscall(SYS_move_mount, tree, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        rc = -errno;
    /* Read-only for the cover alone: the folder bound below keeps its own flags. */
    if (!rc && mount(NULL, root, NULL,
                     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     NULL) < 0)
        rc = -errno;
    if (tree >= 0)
        close(tree);
    if (rc < 0)
        sandbox__layer_note(mnt, "cannot hide %s: %s", root, strerror(-rc));
    return rc;
}
