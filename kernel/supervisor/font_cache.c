/* font_cache: copy matplotlib's font list in when the private folder is made,
 * and back out when the kernel ends.
 *
 * Building the list again costs a third of a second at every first chart. The
 * hard part is that the file is written by sandboxed code, and what one
 * kernel's cell writes must not steer another kernel: a planted entry can
 * make "DejaVu Sans" resolve to another font, or name a file of the cell's
 * own for FreeType to parse in the next kernel. So:
 *  - the cache is kept per workspace (a folder named for a digest of the
 *    workspace's path): a cell can only reach the next kernel of its own
 *    workspace, whose files it can write anyway;
 *  - only a file named exactly fontlist-v<N>.json is taken, at most
 *    FONT_CACHE_MAX bytes, read and written through tfile (no link followed,
 *    no FIFO opened, a fresh file moved into place), and nothing else;
 *  - it must be matplotlib's schema (a FontManager with FontEntry lists and
 *    no other keys), and every font it names must be one of matplotlib's own
 *    (a relative fonts/ path) or a regular file under the system's font
 *    folders. The same checks hold when the cached list is given back.
 * A stale or damaged one costs nothing: matplotlib checks its version and
 * rebuilds. */
#include "kernel/supervisor/font_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "sandbox/tfile.h"

#define FONT_CACHE_MAX     (2u << 20)
#define FONT_CACHE_ENTRIES 20000
#define FONT_CACHE_FILES   4 /* lists of matplotlib versions kept side by side */

/* The system's font folders: where a cached list may point. */
static const char *const font_roots[] = {"/usr/share/fonts/", "/usr/local/share/fonts/",
                                         NULL};

/* The user's cache folder (made if missing) as a descriptor, and in sub the
 * path below it for the workspace: sandpit/matplotlib/<digest>. */
static int cache_root(const char *workspace, char *sub, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[PATH_MAX];
    int n;
    if (xdg && *xdg == '/')
        n = snprintf(base, sizeof base, "%s", xdg);
    else if (home && *home == '/')
        n = snprintf(base, sizeof base, "%s/.cache", home);
    else
        return -ENOENT;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned dlen = 0;
    if (n <= 0 || (size_t)n >= sizeof base || len < 64 ||
        !EVP_Digest(workspace, strlen(workspace), digest, &dlen, EVP_sha256(), NULL))
        return -ENAMETOOLONG;
    int k = snprintf(sub, len, "sandpit/matplotlib/");
    for (unsigned i = 0; i < 8; i++)
        k += snprintf(sub + k, len - (size_t)k, "%02x", digest[i]);
    int rc = fsutil_mkdir_p(base, 0700);
    return rc ? rc : tfile_open_root(base);
}

/* fontlist-v<1 to 5 digits>.json, and nothing else. */
bool font_cache_name(const char *name)
{
    size_t d = strncmp(name, "fontlist-v", 10) == 0 ? strspn(name + 10, "0123456789") : 0;
    return d >= 1 && d <= 5 && strcmp(name + 10 + d, ".json") == 0;
}

static bool font_path_ok(const char *p)
{
    if (!p || !*p || strlen(p) > 1024 || strstr(p, "/../") || strstr(p, "//") ||
        strncmp(p, "../", 3) == 0)
        return false;
    if (p[0] != '/')
        return strncmp(p, "fonts/", 6) == 0; /* matplotlib's own, in its data folder */
    for (const char *const *r = font_roots; *r; r++) {
        struct stat st;
        if (strncmp(p, *r, strlen(*r)) == 0)
            return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    }
    return false;
}

static bool short_string(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) <= 256;
}

static bool entry_ok(const json_t *e)
{
    static const char *const keys[] = {"fname",  "name",    "style", "variant",
                                       "weight", "stretch", "size",  "__class__"};
    const char *key;
    json_t *v;
    if (!json_is_object(e))
        return false;
    json_object_foreach((json_t *)e, key, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            known |= strcmp(key, keys[i]) == 0;
        if (!known || !(short_string(v) || json_is_number(v)))
            return false;
    }
    const char *cls = json_string_value(json_object_get(e, "__class__"));
    return cls && strcmp(cls, "FontEntry") == 0 &&
           short_string(json_object_get(e, "name")) &&
           font_path_ok(json_string_value(json_object_get(e, "fname")));
}

static bool list_ok(const json_t *l, size_t *count)
{
    size_t i;
    json_t *e;
    if (!json_is_array(l))
        return false;
    json_array_foreach(l, i, e) {
        if (++*count > FONT_CACHE_ENTRIES || !entry_ok(e))
            return false;
    }
    return true;
}

/* True if text is a font list of matplotlib's schema naming only fonts that
 * may be named (above). */
bool font_cache_valid(const char *text, size_t len)
{
    json_error_t err;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    bool ok = json_is_object(j) && json_object_size(j) <= 7;
    const char *key;
    json_t *v;
    if (ok)
        json_object_foreach(j, key, v) {
            if (strcmp(key, "_version") == 0)
                ok &= json_is_integer(v);
            else if (strcmp(key, "_FontManager__default_weight") == 0)
                ok &= short_string(v) || json_is_number(v);
            else if (strcmp(key, "default_size") == 0)
                ok &= json_is_null(v) || json_is_number(v);
            else if (strcmp(key, "__class__") == 0)
                ok &=
                    json_is_string(v) && strcmp(json_string_value(v), "FontManager") == 0;
            else if (strcmp(key, "defaultFamily") != 0 && strcmp(key, "afmlist") != 0 &&
                     strcmp(key, "ttflist") != 0)
                ok = false;
        }
    const json_t *fam = json_object_get(j, "defaultFamily");
    ok &= json_is_object(fam) && json_object_size(fam) <= 4;
    if (ok)
        json_object_foreach((json_t *)fam, key, v)
            ok &= short_string(v);
    size_t count = 0;
    ok = ok && list_ok(json_object_get(j, "ttflist"), &count) &&
         list_ok(json_object_get(j, "afmlist"), &count) &&
         json_is_string(json_object_get(j, "__class__"));
    json_decref(j);
    return ok;
}

/* Copies each valid font list of the folder from into the folder to (both
 * descriptors), at most FONT_CACHE_FILES; only_new keeps what to has. */
static void copy_lists(int from, int to, bool only_new)
{
    int fd = dup(from);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    int tried = 0; /* every candidate counts: reading and parsing each costs time */
    while ((e = readdir(d)) && tried < FONT_CACHE_FILES) {
        struct stat st;
        if (!font_cache_name(e->d_name) ||
            (only_new && fstatat(to, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0))
            continue;
        tried++;
        char *text = NULL;
        size_t len = 0;
        bool failed = tfile_read(from, e->d_name, FONT_CACHE_MAX, &text, &len) == 0 &&
                      font_cache_valid(text, len) &&
                      tfile_write(to, e->d_name, text, len, 0600, TFILE_REPLACE) < 0;
        free(text);
        if (failed)
            break; /* the cache cannot be written: no use trying the others */
    }
    closedir(d);
}

/* The two folders: the workspace's cache (made if missing) and the worker's
 * tmpdir/matplotlib (made if missing). 0 with both open, or -errno. */
static int open_both(const char *tmpdir, const char *workspace, int *cache, int *mine)
{
    char sub[128];
    *cache = *mine = -1;
    int root = cache_root(workspace, sub, sizeof sub);
    if (root < 0)
        return root;
    *cache = tfile_mkdir(root, sub, 0700);
    close(root);
    int tmp = tfile_open_root(tmpdir);
    *mine = tmp < 0 ? tmp : tfile_mkdir(tmp, "matplotlib", 0700);
    if (tmp >= 0)
        close(tmp);
    if (*cache >= 0 && *mine >= 0)
        return 0;
    int rc = *cache < 0 ? *cache : *mine;
    if (*cache >= 0)
        close(*cache);
    if (*mine >= 0)
        close(*mine);
    *cache = *mine = -1;
    return rc;
}

void font_cache_in(const char *tmpdir, const char *workspace)
{
    int cache, mine;
    if (open_both(tmpdir, workspace, &cache, &mine) == 0) {
        copy_lists(cache, mine, false);
        close(cache);
        close(mine);
    }
}

void font_cache_out(const char *tmpdir, const char *workspace)
{
    int cache, mine;
    if (open_both(tmpdir, workspace, &cache, &mine) == 0) {
        copy_lists(mine, cache, true);
        close(cache);
        close(mine);
    }
}
