/* e2b_fs: ListDir and Stat of envd's filesystem service (e2b_fs.h).
 *
 * A listing walks folders a cell can change while it is read: each folder
 * is opened with tfile_open_dir on its parent's descriptor (a link where a
 * folder was is refused, not followed), each entry looked at with fstatat
 * and AT_SYMLINK_NOFOLLOW, a link's target read with readlinkat and shown,
 * never opened. FIFOs, sockets and devices are left out, as envd's SDKs
 * drop entries of no known type. The answer is bounded in entries and in
 * depth; past the bound it is an error, not a silent cut. */
#include "kernel/serve/e2b_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernel/serve/e2b_path.h"
#include "sandbox/tfile.h"

#define SERVICE   "/filesystem.Filesystem/"
#define SHOWN_MAX (E2B_PATH_MAX + sizeof E2B_PATH_HOME + 1)

bool e2b_fs_owns(const char *route)
{
    return strncmp(route, SERVICE, sizeof SERVICE - 1) == 0;
}

/* Connect's error: {"code", "message"} with the status Connect maps code to. */
static void rpc_error(struct routes_resp *out, const char *code, const char *message)
{
    static const struct {
        const char *code;
        int status;
    } statuses[] = {
        {"invalid_argument", 400},  {"not_found", 404},
        {"permission_denied", 403}, {"resource_exhausted", 429},
        {"unimplemented", 501},     {"unauthenticated", 401},
        {"already_exists", 409},    {"failed_precondition", 400},
    };
    int status = 500;
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (strcmp(statuses[i].code, code) == 0)
            status = statuses[i].status;
    json_decref(out->json);
    out->json = json_pack("{s:s, s:s}", "code", code, "message", message);
    out->status = out->json ? status : 500;
}

static void rpc_fail(struct routes_resp *out, int rc, const char *shown)
{
    char msg[SHOWN_MAX + 160];
    const char *code = rc == -ENOENT                   ? "not_found"
                       : rc == -EACCES || rc == -EPERM ? "permission_denied"
                       : rc == -E2BIG                  ? "resource_exhausted"
                       : rc == -ENOMEM || rc == -EIO   ? "internal"
                                                       : "invalid_argument";
    const char *why = rc == -ENOENT    ? "no such file or folder"
                      : rc == -E2BIG   ? "the listing has too many entries"
                      : rc == -ENOTDIR ? "not a folder"
                                       : tfile_strerror(rc);
    snprintf(msg, sizeof msg, "%s: %s", shown, why);
    rpc_error(out, code, msg);
}

/* Go's FileMode.String() of st: "drwxr-xr-x", "-rw-r--r--", "Lrwxrwxrwx". */
static void permissions(const struct stat *st, char out[11])
{
    static const char rwx[] = "rwxrwxrwx";
    out[0] = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'L' : '-';
    for (int i = 0; i < 9; i++)
        out[1 + i] = st->st_mode & (1u << (8 - i)) ? rwx[i] : '-';
    out[10] = 0;
}

/* envd's EntryInfo of one entry (new), or NULL for a kind it does not list. */
static json_t *entry_json(const char *name, const char *shown, const struct stat *st,
                          const char *target)
{
    const char *type = S_ISREG(st->st_mode)   ? "FILE_TYPE_FILE"
                       : S_ISDIR(st->st_mode) ? "FILE_TYPE_DIRECTORY"
                       : S_ISLNK(st->st_mode) ? "FILE_TYPE_SYMLINK"
                                              : NULL;
    if (!type)
        return NULL;
    char perm[11], when[64], owner[24], group[24];
    struct tm tm;
    permissions(st, perm);
    time_t sec = st->st_mtim.tv_sec;
    size_t n =
        gmtime_r(&sec, &tm) ? strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
    snprintf(when + n, sizeof when - n, ".%09ldZ", (long)st->st_mtim.tv_nsec);
    snprintf(owner, sizeof owner, "%u", (unsigned)st->st_uid);
    snprintf(group, sizeof group, "%u", (unsigned)st->st_gid);
    json_t *e = json_pack("{s:s, s:s, s:s, s:I, s:i, s:s, s:s, s:s, s:s}", "name", name,
                          "type", type, "path", shown, "size", (json_int_t)st->st_size,
                          "mode", (int)(st->st_mode & 07777), "permissions", perm,
                          "owner", owner, "group", group, "modifiedTime", when);
    if (e && target)
        json_object_set_new(e, "symlinkTarget", json_string(target));
    return e;
}

/* The entry name in dirfd as EntryInfo (new, or NULL: *rc says why, 0 for a
 * kind left out). */
static json_t *stat_entry(int dirfd, const char *name, const char *shown, bool *is_dir,
                          int *rc)
{
    struct stat st;
    char target[E2B_PATH_MAX + 1];
    *rc = 0;
    *is_dir = false;
    if (*name ? fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) : fstat(dirfd, &st)) {
        *rc = -errno;
        return NULL;
    }
    bool link = S_ISLNK(st.st_mode);
    ssize_t n = link ? readlinkat(dirfd, name, target, sizeof target - 1) : -1;
    if (n >= 0)
        target[n] = 0;
    *is_dir = S_ISDIR(st.st_mode);
    json_t *e = entry_json(*name ? name : e2b_path_name(shown), shown, &st,
                           n >= 0 ? target : NULL);
    if (!e && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || link))
        *rc = -ENOMEM;
    return e;
}

struct listing {
    json_t *entries;
    size_t count;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The names in the folder fd (consumed), sorted as envd (Go's os.ReadDir)
 * sorts them, at most max of them (-E2BIG past it). 0 with *names new
 * (names_free), or -errno. */
static int read_names(int fd, size_t max, char ***names, size_t *n)
{
    DIR *d = fdopendir(fd);
    *names = NULL;
    *n = 0;
    if (!d) {
        close(fd);
        return -errno;
    }
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (*n == max) {
            rc = -E2BIG;
        } else if (*n == cap) {
            char **more = realloc(*names, (cap = cap ? cap * 2 : 32) * sizeof *more);
            rc = more ? 0 : -ENOMEM;
            *names = more ? more : *names;
        }
        if (!rc && !((*names)[*n] = strdup(de->d_name)))
            rc = -ENOMEM;
        if (!rc)
            (*n)++;
    }
    closedir(d);
    if (rc) {
        names_free(*names, *n);
        *names = NULL;
        *n = 0;
        return rc;
    }
    if (*n)
        qsort(*names, *n, sizeof **names, by_name);
    return 0;
}

/* Lists the folder fd (consumed) whose path is rel, depth levels down,
 * depth first as envd's walk goes. */
static int list_dir(int fd, const char *rel, int depth, struct listing *l)
{
    char **names = NULL;
    size_t n = 0;
    int dfd = dup(fd);
    int rc =
        dfd < 0 ? -errno : read_names(fd, E2B_FILES_MAX_LIST - l->count + 1, &names, &n);
    if (dfd < 0)
        close(fd);
    for (size_t i = 0; !rc && i < n; i++) {
        char child[E2B_PATH_MAX + 1], shown[SHOWN_MAX];
        int w = snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof child ||
            e2b_path_client(child, shown, sizeof shown))
            continue; /* deeper than a client can name */
        bool is_dir;
        json_t *e = stat_entry(dfd, names[i], shown, &is_dir, &rc);
        if (rc == -ENOENT)
            rc = 0; /* gone since it was read */
        if (!e)
            continue;
        if (++l->count > E2B_FILES_MAX_LIST || json_array_append_new(l->entries, e)) {
            rc = l->count > E2B_FILES_MAX_LIST ? -E2BIG : -ENOMEM;
            break;
        }
        int sub = is_dir && depth > 1 ? tfile_open_dir(dfd, names[i]) : -1;
        if (sub >= 0)
            rc = list_dir(sub, child, depth - 1, l);
    }
    names_free(names, n);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* The request's JSON body and its "path", mapped; NULL with out answered. */
static json_t *parse(const struct e2b_files_req *rq, char *rel, char *shown,
                     struct routes_resp *out)
{
    const char *type = rq->content_type ? rq->content_type : "";
    if (strncasecmp(type, "application/json", 16) != 0 ||
        (type[16] && type[16] != ';' && type[16] != ' ')) {
        rpc_error(out, "invalid_argument", "this server speaks Connect's JSON only");
        out->status = 415;
        return NULL;
    }
    json_error_t e;
    json_t *v = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &e);
    const json_t *path = json_object_get(v, "path");
    const char *why = NULL;
    if (!json_is_object(v) || !json_is_string(path))
        why = "the body must be a JSON object with a string \"path\"";
    else if (e2b_path_map(json_string_value(path), json_string_length(path), rel,
                          E2B_PATH_MAX + 1, &why) == 0 &&
             e2b_path_client(rel, shown, SHOWN_MAX))
        why = "the path is too long";
    if (why) {
        json_decref(v);
        rpc_error(out, "invalid_argument", why);
        return NULL;
    }
    return v;
}

static void list_call(const struct e2b_files_req *rq, int root, struct routes_resp *out)
{
    char rel[E2B_PATH_MAX + 1], shown[SHOWN_MAX];
    json_t *req = parse(rq, rel, shown, out);
    if (!req)
        return;
    const json_t *dj = json_object_get(req, "depth");
    json_int_t depth = json_is_integer(dj) ? json_integer_value(dj) : 1;
    bool typed = !dj || json_is_integer(dj);
    json_decref(req);
    if (!typed || depth < 0 || depth > E2B_FILES_MAX_DEPTH) {
        rpc_error(out, "invalid_argument", "depth must be a whole number from 1 to 16");
        return;
    }
    struct listing l = {.entries = json_array()};
    int fd = l.entries ? tfile_open_dir(root, rel) : -ENOMEM;
    int rc = fd < 0 ? fd : list_dir(fd, rel, depth ? (int)depth : 1, &l);
    if (rc) {
        json_decref(l.entries);
        rpc_fail(out, rc, shown);
        return;
    }
    out->json = json_pack("{s:o}", "entries", l.entries);
    out->status = out->json ? 200 : 500;
}

static void stat_call(const struct e2b_files_req *rq, int root, struct routes_resp *out)
{
    char rel[E2B_PATH_MAX + 1], shown[SHOWN_MAX];
    json_t *req = parse(rq, rel, shown, out);
    if (!req)
        return;
    json_decref(req);
    const char *name = e2b_path_name(rel);
    char dir[E2B_PATH_MAX + 1];
    size_t dlen = (size_t)(name - rel);
    memcpy(dir, rel, dlen);
    dir[dlen ? dlen - 1 : 0] = 0;
    int dirfd = *name ? tfile_open_dir(root, dir) : root, rc = dirfd < 0 ? dirfd : 0;
    bool is_dir;
    json_t *e = rc ? NULL : stat_entry(dirfd, *name ? name : "", shown, &is_dir, &rc);
    if (dirfd >= 0 && dirfd != root)
        close(dirfd);
    if (!e) {
        rpc_fail(out, rc ? rc : -TFILE_EKIND, shown);
        return;
    }
    out->json = json_pack("{s:o}", "entry", e);
    out->status = out->json ? 200 : 500;
}

void e2b_fs_handle(const struct e2b_files_req *rq, struct routes_resp *out)
{
    const char *call = rq->route + sizeof SERVICE - 1;
    bool list = strcmp(call, "ListDir") == 0, st = strcmp(call, "Stat") == 0;
    if (!list && !st) {
        rpc_error(out, "unimplemented",
                  "this server lists and reads files only: ListDir and Stat, GET and "
                  "POST /files");
        return;
    }
    if (strcmp(rq->method, "POST") != 0) {
        rpc_error(out, "unimplemented", "Connect calls are POST requests");
        out->status = 405;
        return;
    }
    if (rq->workspaces) {
        rpc_error(out, "unimplemented",
                  "the files API serves one workspace: this server gives each user a "
                  "workspace of their own (--workspaces)");
        return;
    }
    int root = tfile_open_root(rq->workspace);
    if (root < 0) {
        rpc_error(out, "internal", "cannot open the workspace");
        return;
    }
    if (list)
        list_call(rq, root, out);
    else
        stat_call(rq, root, out);
    close(root);
}
