/* kfile: the kernel's own files, whole (kfile.h). A read goes on until the
 * end, since the kernel may hand a file out in pieces (mountinfo a page at a
 * time); a write is one call, as the kernel takes a value whole. */
#include "sandbox/kfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/tfile.h"

char *kfile_read_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = tfile_read_fd(fd, KFILE_TEXT_MAX - 2, 4096, &text, &len);
    close(fd);
    errno = -rc;
    return text;
}

int kfile_write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

bool kfile_join(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n > 0 && (size_t)n < len;
}

int kfile_write_at(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    if (!kfile_join(path, sizeof path, dir, name))
        return -ENAMETOOLONG;
    return kfile_write_text(path, text);
}

int kfile_read_line_at(const char *dir, const char *name, char *buf, size_t len)
{
    char path[PATH_MAX];
    if (!kfile_join(path, sizeof path, dir, name))
        return -ENAMETOOLONG;
    char *text = kfile_read_text(path);
    if (!text)
        return -errno;
    snprintf(buf, len, "%.*s", (int)strcspn(text, "\n"), text);
    free(text);
    return 0;
}
