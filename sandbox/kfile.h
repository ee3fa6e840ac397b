/* kfile: the kernel's own files (/proc, /proc/sys, cgroupfs), read and
 * written whole by path, for the sandbox's layers on both sides: the
 * supervisor's cgroups (cgroup.c, stop.c) and the worker's maps and checks
 * (namespaces.c, cgroup_check.c). No cell can make a link or a FIFO there, so
 * they are not tfile's (sandbox/POLICY.md, "The trusted side"), and nothing
 * here is for a path in a folder the worker can write. Paths are borrowed;
 * text returned is the caller's to free. */
#ifndef SANDPIT_SANDBOX_KFILE_H
#define SANDPIT_SANDBOX_KFILE_H

#include <stdbool.h>
#include <stddef.h>

/* The most kfile_read_text reads: /proc/self/mountinfo of a busy container. */
#define KFILE_TEXT_MAX (1u << 20)

/* The whole of a small file, NUL-terminated (caller frees), or NULL with errno
 * set (EFBIG past KFILE_TEXT_MAX). */
char *kfile_read_text(const char *path);

/* Writes text to the file at path in one write (a kernel file takes a value
 * whole or not at all). 0 or -errno (-EIO for a short write). */
int kfile_write_text(const char *path, const char *text);

/* dir/name into buf; false if it does not fit. */
bool kfile_join(char *buf, size_t len, const char *dir, const char *name);

/* kfile_write_text on dir/name. 0 or -errno. */
int kfile_write_at(const char *dir, const char *name, const char *text);

/* The first line of dir/name (newline removed) into buf: 0 or -errno. */
int kfile_read_line_at(const char *dir, const char *name, char *buf, size_t len);

#endif
