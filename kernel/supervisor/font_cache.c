/* font_cache: copy matplotlib's font list in when the private folder is made,
 * and back out when the kernel ends.
 *
 * Building the list again costs a third of a second at every first chart. The
 * hard part is that the file is written by sandboxed code: only a modest
 * regular file named like matplotlib's is taken, never through a symbolic
 * link, and it is written through a temporary name and a rename so that a
 * reader never sees half a file. A stale or damaged one costs nothing:
 * matplotlib checks its version and rebuilds. */
#include "kernel/supervisor/font_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/fsutil.h"

#define FONT_CACHE_MAX (4u << 20)

static int font_cache_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg == '/')
        n = snprintf(buf, len, "%s/sandpit/matplotlib", xdg);
    else if (home && *home == '/')
        n = snprintf(buf, len, "%s/.cache/sandpit/matplotlib", home);
    else
        return -ENOENT;
    return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static bool font_cache_name(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "fontlist-", 9) == 0 && n > 14 && n < 64 &&
           strcmp(name + n - 5, ".json") == 0 && !strchr(name, '/');
}

/* Copies the regular file name in from_dir (not a symbolic link: the folder
 * is the sandboxed code's to change), of at most FONT_CACHE_MAX bytes, into
 * dir. */
static void copy_small_file(int from_dir, const char *name, const char *dir)
{
    char to[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(to, sizeof to, "%s/%s", dir, name) >= (int)sizeof to ||
        snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid()) >=
            (int)sizeof tmp)
        return;
    int in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return;
    struct stat st;
    char *buf = NULL;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size > FONT_CACHE_MAX || !(buf = malloc((size_t)st.st_size)) ||
        read(in, buf, (size_t)st.st_size) != st.st_size) {
        free(buf);
        close(in);
        return;
    }
    close(in);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out >= 0) {
        bool ok = write(out, buf, (size_t)st.st_size) == st.st_size;
        ok &= close(out) == 0;
        if (!ok || rename(tmp, to) != 0)
            unlink(tmp);
    }
    free(buf);
}

static void copy_font_cache(const char *from_dir, const char *to_dir, bool only_new)
{
    int dfd = open(from_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!font_cache_name(e->d_name))
            continue;
        char existing[PATH_MAX];
        if (snprintf(existing, sizeof existing, "%s/%s", to_dir, e->d_name) >=
            (int)sizeof existing)
            continue;
        if (only_new && access(existing, F_OK) == 0)
            continue;
        copy_small_file(dfd, e->d_name, to_dir);
    }
    closedir(d);
}

void font_cache_in(const char *tmpdir)
{
    char cache[PATH_MAX], mine[PATH_MAX];
    if (font_cache_dir(cache, sizeof cache) != 0 ||
        snprintf(mine, sizeof mine, "%s/matplotlib", tmpdir) >= (int)sizeof mine ||
        mkdir(mine, 0700) != 0)
        return;
    copy_font_cache(cache, mine, false);
}

void font_cache_out(const char *tmpdir)
{
    char cache[PATH_MAX], mine[PATH_MAX];
    if (font_cache_dir(cache, sizeof cache) != 0 ||
        snprintf(mine, sizeof mine, "%s/matplotlib", tmpdir) >= (int)sizeof mine ||
        fsutil_mkdir_p(cache, 0700) != 0)
        return;
    copy_font_cache(mine, cache, true);
}
