/* tfile: the one way trusted code (the supervisor, the client commands, the MCP
 * server, the worker's own set-up before its sandbox is in force) touches a
 * path in a folder that sandboxed code can write: the workspace, the worker's
 * temporary folder, an output folder, a cache a cell could have filled.
 *
 * The rule: such a path is never followed from the root of the file system.
 * The caller holds a descriptor of a folder the worker cannot replace (opened
 * from a path the user chose) and names what lies beneath it. Every component
 * is resolved beneath that folder, no symbolic link is followed anywhere (the
 * leaf included), `..` is refused, every open is O_NONBLOCK (a FIFO cannot
 * hang the caller) and what opened is kept only if it is the kind asked for
 * (a regular file, or a folder). New files are made under a fresh random name
 * with O_CREAT | O_EXCL and moved into place with renameat on the folder's
 * descriptor; trees are removed with unlinkat on descriptors.
 *
 * It lives in sandbox/ because it needs libc alone and both sides use it: the
 * worker's mount set-up (sandbox/namespaces.c) and everything in kernel/.
 * Ownership: paths are borrowed; a descriptor returned is the caller's to
 * close; memory returned is the caller's to free. Every action returns 0 (or
 * a descriptor) or -errno.
 */
#ifndef SANDPIT_TFILE_H
#define SANDPIT_TFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* How deep tfile_remove_tree goes; a deeper folder is left where it is. */
#define TFILE_MAX_DEPTH 32

/* The errors that mean "the path was refused", beyond the usual ones:
 *   -ELOOP        a symbolic link (or a /proc magic link) lies on the path
 *   -EXDEV        the path leads out of the folder (an absolute path, `..`)
 *   -EISDIR       a folder where a file was asked
 *   -ENOTDIR      a file where a folder was asked (at the end or on the way)
 *   -TFILE_EKIND  neither a regular file nor a folder: a FIFO, a socket, a
 *                 device (opened O_NONBLOCK, looked at, closed)
 *   -EINVAL       an empty name, or flags this module does not take
 * tfile_strerror() says each in words. */
#define TFILE_EKIND EMEDIUMTYPE

/* A sentence for rc (-errno from this module or elsewhere): "a symbolic link
 * is in the way", "not a regular file", or strerror's text. Borrowed, static. */
const char *tfile_strerror(int rc);

/* Opens a folder whose path the user chose (a workspace, --outdir outside any
 * workspace, the cache's parent): links in it are followed as the user meant
 * them. O_RDONLY | O_DIRECTORY | O_CLOEXEC. The descriptor, or -errno. */
int tfile_open_root(const char *path);

/* Opens a private folder of this user's at path, an absolute path in a folder
 * the worker cannot write (the per-user folder of the kernels' private folders,
 * the sockets' folder in the runtime folder), made with mode 0700 if missing.
 * Accepted only if it is a folder, not a link (-ELOOP), and this user's
 * (-EPERM); one that gives anyone else a right is made 0700 again with repair,
 * refused (-EPERM) without. O_RDONLY | O_DIRECTORY | O_CLOEXEC. The
 * descriptor, or -errno. */
int tfile_private_dir(const char *path, bool repair);

/* Opens the regular file at path beneath dirfd, never following a link.
 * flags: O_RDONLY, O_WRONLY or O_RDWR, with O_APPEND or O_TRUNC if wanted
 * (O_CREAT is refused: make files with tfile_create); O_NONBLOCK, O_NOCTTY
 * and O_CLOEXEC are always added. The descriptor, or -errno (see above). A
 * FIFO with no writer opens at once and is refused; one without a reader is
 * refused with -ENXIO or -TFILE_EKIND; neither blocks. */
int tfile_open(int dirfd, const char *path, int flags);

/* Opens the folder at path beneath dirfd ("" or "." is dirfd itself), never
 * following a link: O_RDONLY | O_DIRECTORY, so that it can be listed. The
 * descriptor, or -errno. */
int tfile_open_dir(int dirfd, const char *path);

/* mkdir -p beneath dirfd: makes each missing folder of path with mode and
 * opens the last, never following a link (a link where a folder should be
 * is -ELOOP, not followed nor replaced). The descriptor, or -errno. */
int tfile_mkdir(int dirfd, const char *path, mode_t mode);

/* Reads the regular file at path beneath dirfd, whole, if it holds at most
 * max bytes (-EFBIG otherwise). 0 with *out new (caller frees; a 0 byte
 * follows the *len bytes read), or -errno with *out NULL. */
int tfile_read(int dirfd, const char *path, size_t max, char **out, size_t *len);

/* Reads the open descriptor fd to its end, if that is at most max bytes
 * (-EFBIG otherwise); hint is the size expected, to allocate once. No path:
 * for a descriptor already opened as it must be (tfile_read, the kernel's own
 * files, standard input). 0 with *out as for tfile_read, or -errno. */
int tfile_read_fd(int fd, size_t max, size_t hint, char **out, size_t *len);

/* As tfile_read_fd, with room bytes left before what is read: the bytes are
 * at *out + room (*out is the buffer, to free), for a caller that writes
 * them after a header of its own without copying them. */
int tfile_read_fd_room(int fd, size_t max, size_t hint, size_t room, char **out,
                       size_t *len);

/* A file being written: made under a fresh name, moved into place by
 * tfile_commit, or removed by tfile_abort. */
struct tfile_new {
    int dirfd;     /* the folder it is made in (owned) */
    int fd;        /* the new file, open for writing (owned) */
    char name[32]; /* its temporary name in dirfd, ".sandpit-" and 16 hex digits */
};

/* Makes a new, empty regular file with mode in the folder dir beneath dirfd
 * ("" for dirfd itself), under a fresh random name (O_CREAT | O_EXCL, so
 * nothing planted there is ever opened). 0 with t filled, or -errno with t
 * holding nothing (t->fd and t->dirfd -1). Write to t->fd, then commit or
 * abort. */
int tfile_create(int dirfd, const char *dir, mode_t mode, struct tfile_new *t);

/* tfile_commit's flags. */
#define TFILE_REPLACE                                                                    \
    1u /* replace what is at name (the entry itself, never what a                        \
        * link there points to); without it, -EEXIST */

/* Closes t->fd and moves the file to name (one component, no '/') in the same
 * folder, with renameat on the folder's descriptor. 0 with t released; on
 * -EEXIST (name taken and no TFILE_REPLACE) t is kept as it was, for another
 * name or tfile_abort; on any other error the file is removed and t released. */
int tfile_commit(struct tfile_new *t, const char *name, unsigned flags);

/* Removes the new file and releases t. Accepts a released t. */
void tfile_abort(struct tfile_new *t);

/* Writes len bytes of buf to a new file at path beneath dirfd: tfile_create in
 * its folder, write, tfile_commit with flags. 0 or -errno (-EEXIST when path
 * is taken and flags lack TFILE_REPLACE); nothing is left on failure. */
int tfile_write(int dirfd, const char *path, const void *buf, size_t len, mode_t mode,
                unsigned flags);

/* Removes name (one component) in dirfd and, if it is a folder, everything in
 * it, to TFILE_MAX_DEPTH levels: each folder is opened with openat on its
 * parent's descriptor (O_NOFOLLOW | O_DIRECTORY), every entry is removed with
 * unlinkat, a link is removed itself and never followed. 0, or the first
 * -errno met (what could not be removed stays). A name that is not there is
 * -ENOENT. */
int tfile_remove_tree(int dirfd, const char *name);

/* Removes the tree at path, a path the user or the kernel chose whose parent
 * the worker cannot write (the kernel's own temporary folder, a kernelspec):
 * the parent is opened by path, the last component removed with
 * tfile_remove_tree. 0 or -errno. */
int tfile_remove_path(const char *path);

/* For the unit tests only: true makes every open walk its path one component
 * at a time with O_NOFOLLOW, as on kernels without openat2 (before Linux 5.6). */
void tfile_force_walk(bool on);

#endif
