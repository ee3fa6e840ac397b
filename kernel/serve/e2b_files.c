/* e2b_files: POST and GET /files, as envd answers them (e2b_files.h).
 *
 * The hard part is that the client names paths in a folder the kernels'
 * code can write: a cell may have put a link, a FIFO or a folder where the
 * client expects a file. Every path goes through e2b_path_map (text only)
 * and then tfile, beneath the workspace's descriptor, so a link on the way
 * is refused, not followed; the leaf is looked at (never opened) before a
 * write so that a link or a FIFO there is refused rather than replaced, and
 * the new file is written under a fresh name and renamed into place
 * (tfile_write), so that a reader never sees half a file. A multipart body
 * is walked twice: every part is checked and mapped before any is written. */
#include "kernel/serve/e2b_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/serve/e2b_fs.h"
#include "kernel/serve/e2b_path.h"
#include "kernel/serve/multipart.h"
#include "sandbox/tfile.h"

#define FILE_MODE 0644
#define DIR_MODE  0755

bool e2b_files_owns(const char *route)
{
    return strcmp(route, "/files") == 0;
}

size_t e2b_files_body_bound(const char *method, const char *route, size_t max_upload)
{
    return strcmp(method, "POST") == 0 && strcmp(route, "/files") == 0
               ? max_upload + E2B_FILES_FRAMING
               : 0;
}

static void files_error(struct routes_resp *out, int status, const char *message)
{
    json_decref(out->json);
    out->json = json_pack("{s:s, s:i}", "message", message, "code", status);
    out->status = out->json ? status : 500;
}

static int status_of(int rc)
{
    switch (-rc) {
    case ENOENT:
        return 404;
    case EFBIG:
        return 413;
    case ENOSPC:
    case EDQUOT:
        return 507;
    case ELOOP:
    case EXDEV:
    case EISDIR:
    case ENOTDIR:
    case TFILE_EKIND:
    case ENXIO:
    case EINVAL:
    case ENAMETOOLONG:
    case EEXIST:
        return 400;
    case EACCES:
    case EPERM:
        return 403;
    case EBUSY:
        return 409;
    default:
        return 500;
    }
}

/* An error from tfile as an answer naming the path as the client gave it. */
static void fail(struct routes_resp *out, int rc, const char *client_path)
{
    char msg[E2B_PATH_MAX + 160];
    const char *why = rc == -ENOENT    ? "no such file or folder"
                      : rc == -EFBIG   ? "the file is larger than --max-upload"
                      : rc == -EISDIR  ? "it is a folder, not a file"
                      : rc == -ENOTDIR ? "a file is in the way of a folder"
                      : rc == -EEXIST  ? "a folder is in the way"
                      : rc == -ENXIO   ? tfile_strerror(-TFILE_EKIND)
                                       : tfile_strerror(rc);
    snprintf(msg, sizeof msg, "%s: %s", client_path, why);
    files_error(out, status_of(rc), msg);
}

/* Maps a client's path; 0 with rel and shown (as the client sees it) filled,
 * or -EINVAL with out answered 400. */
static int map_path(const char *path, size_t len, char *rel, char *shown,
                    struct routes_resp *out)
{
    const char *why = NULL;
    if (!path) {
        files_error(out, 400, "the path is missing (?path=)");
        return -EINVAL;
    }
    if (e2b_path_map(path, len, rel, E2B_PATH_MAX + 1, &why) ||
        e2b_path_client(rel, shown, E2B_PATH_MAX + sizeof E2B_PATH_HOME + 1)) {
        files_error(out, 400, why ? why : "the path is too long");
        return -EINVAL;
    }
    return 0;
}

/* The workspace's descriptor, or -errno with out answered. */
static int open_workspace(const struct e2b_files_req *rq, struct routes_resp *out)
{
    if (rq->workspaces) {
        files_error(out, 501,
                    "the files API serves one workspace: this server gives each "
                    "user a workspace of their own (--workspaces)");
        return -ENOSYS;
    }
    int fd = tfile_open_root(rq->workspace);
    if (fd < 0)
        files_error(out, 500, "cannot open the workspace");
    return fd;
}

/* What is at name in dirfd, not following a link: 0 if nothing or a regular
 * file (it will be replaced), else the error that refuses it. */
static int leaf_writable(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return errno == ENOENT ? 0 : -errno;
    if (S_ISLNK(st.st_mode))
        return -ELOOP;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    return S_ISREG(st.st_mode) ? 0 : -TFILE_EKIND;
}

/* Writes len bytes of data at rel beneath root, folders made as needed. */
static int write_file(int root, const char *rel, const char *data, size_t len)
{
    const char *name = e2b_path_name(rel);
    if (!*name)
        return -EISDIR; /* the workspace itself */
    char dir[E2B_PATH_MAX + 1];
    size_t dlen = (size_t)(name - rel);
    memcpy(dir, rel, dlen);
    dir[dlen ? dlen - 1 : 0] = 0;
    int dirfd = dlen ? tfile_mkdir(root, dir, DIR_MODE) : root;
    if (dirfd < 0)
        return dirfd == -EEXIST ? -ENOTDIR : dirfd;
    int rc = leaf_writable(dirfd, name);
    if (!rc)
        rc = tfile_write(dirfd, name, data, len, FILE_MODE, TFILE_REPLACE);
    if (dirfd != root)
        close(dirfd);
    return rc;
}

/* Appends envd's entry for a written file to list. 0 or -ENOMEM. */
static int add_entry(json_t *list, const char *shown, const char *rel)
{
    json_t *e = json_pack("{s:s, s:s, s:s}", "path", shown, "name", e2b_path_name(rel),
                          "type", "file");
    return e && !json_array_append_new(list, e) ? 0 : -ENOMEM;
}

/* One file's bytes written at the client's path; its entry added to list. */
static int upload_one(int root, const char *path, size_t plen, const char *data,
                      size_t len, size_t max, json_t *list, struct routes_resp *out)
{
    char rel[E2B_PATH_MAX + 1], shown[E2B_PATH_MAX + sizeof E2B_PATH_HOME + 1];
    if (map_path(path, plen, rel, shown, out))
        return -EINVAL;
    int rc = len > max ? -EFBIG : write_file(root, rel, data, len);
    if (rc) {
        fail(out, rc, shown);
        return rc;
    }
    if (add_entry(list, shown, rel)) {
        files_error(out, 500, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

/* The parts of a multipart body: checked and counted (write false), or
 * written (write true). 0 or -errno with out answered. */
static int walk_parts(const struct e2b_files_req *rq, const char *boundary, int root,
                      bool write, json_t *list, struct routes_resp *out)
{
    struct multipart m;
    struct multipart_part *p = malloc(sizeof *p);
    int rc, files = 0;
    if (!p) {
        files_error(out, 500, "out of memory");
        return -ENOMEM;
    }
    multipart_init(&m, boundary, rq->body, rq->len);
    while ((rc = multipart_next(&m, p)) == 1) {
        if (strcmp(p->name, "file") != 0)
            continue;
        files++;
        const char *path = rq->path ? rq->path : p->has_filename ? p->filename : NULL;
        size_t plen = rq->path ? rq->path_len : strlen(p->filename);
        char rel[E2B_PATH_MAX + 1], shown[E2B_PATH_MAX + sizeof E2B_PATH_HOME + 1];
        if (write
                ? upload_one(root, path, plen, p->data, p->len, rq->max_upload, list, out)
                : map_path(path, plen, rel, shown, out)) {
            rc = -EINVAL;
            break;
        }
        if (!write && p->len > rq->max_upload) {
            fail(out, -EFBIG, shown);
            rc = -EFBIG;
            break;
        }
    }
    free(p);
    if (rc < 0 && !out->json)
        files_error(out, 400, m.error ? m.error : "the multipart body is malformed");
    else if (!rc && !files)
        files_error(out, 400, "the multipart body has no \"file\" part");
    else if (!rc && files > 1 && rq->path)
        files_error(out, 400, "several files cannot go to one path (?path=)");
    return rc < 0 || !files || (files > 1 && rq->path) ? -EINVAL : 0;
}

/* POST /files: the body's file (or files) written; 0 or -errno with out
 * answered. */
static int upload(const struct e2b_files_req *rq, int root, json_t *list,
                  struct routes_resp *out)
{
    const char *type = rq->content_type ? rq->content_type : "";
    char boundary[MULTIPART_MAX_BOUNDARY + 1];
    if (rq->content_encoding && *rq->content_encoding &&
        strcasecmp(rq->content_encoding, "identity") != 0) {
        files_error(out, 415, "compressed uploads are not supported: send the bytes");
        return -EINVAL;
    }
    if (strncasecmp(type, "multipart/", 10) == 0) {
        if (multipart_boundary(type, boundary, sizeof boundary)) {
            files_error(out, 400,
                        "a multipart body needs multipart/form-data with a boundary");
            return -EINVAL;
        }
        int rc = walk_parts(rq, boundary, root, false, NULL, out);
        return rc ? rc : walk_parts(rq, boundary, root, true, list, out);
    }
    size_t n = strcspn(type, "; \t");
    if (*type && !(n == 24 && strncasecmp(type, "application/octet-stream", n) == 0)) {
        files_error(out, 415,
                    "the body must be multipart/form-data (a \"file\" part) or "
                    "application/octet-stream");
        return -EINVAL;
    }
    return upload_one(root, rq->path, rq->path_len, rq->body, rq->len, rq->max_upload,
                      list, out);
}

/* GET /files: the file's bytes, raw. */
static void download(const struct e2b_files_req *rq, int root, struct routes_resp *out)
{
    char rel[E2B_PATH_MAX + 1], shown[E2B_PATH_MAX + sizeof E2B_PATH_HOME + 1];
    if (map_path(rq->path, rq->path_len, rel, shown, out))
        return;
    char *data = NULL;
    size_t len = 0;
    /* In memory once, after the room http.c writes its framing in. */
    int fd = *rel ? tfile_open(root, rel, O_RDONLY) : -EISDIR, rc = fd < 0 ? fd : 0;
    struct stat st;
    if (!rc && fstat(fd, &st))
        rc = -errno;
    if (!rc && (uint64_t)st.st_size > rq->max_upload)
        rc = -EFBIG;
    if (!rc)
        rc = tfile_read_fd_room(fd, rq->max_upload, (size_t)st.st_size, LWS_PRE, &data,
                                &len);
    if (fd >= 0)
        close(fd);
    if (rc == -ENXIO)
        rc = -TFILE_EKIND;
    if (rc) {
        fail(out, rc, shown);
        return;
    }
    out->status = 200;
    out->owned = data;
    out->owned_pre = true;
    out->raw = (const unsigned char *)data + LWS_PRE;
    out->raw_len = len;
    out->content_type = "application/octet-stream";
}

void e2b_files_handle(const struct e2b_files_req *rq, struct routes_resp *out)
{
    bool get = strcmp(rq->method, "GET") == 0, post = strcmp(rq->method, "POST") == 0;
    if (!get && !post) {
        files_error(out, 405, "method not allowed: GET or POST /files");
        return;
    }
    int root = open_workspace(rq, out);
    if (root < 0)
        return;
    if (get) {
        download(rq, root, out);
    } else {
        json_t *list = json_array();
        if (!list)
            files_error(out, 500, "out of memory");
        else if (!upload(rq, root, list, out)) {
            json_decref(out->json);
            out->json = list;
            out->status = 200;
            list = NULL;
        }
        json_decref(list);
    }
    close(root);
}

bool e2b_files_serve(struct serve *s, const struct serve_request *rq,
                     struct routes_resp *out)
{
    bool fs = e2b_fs_owns(rq->path);
    if (!fs && !e2b_files_owns(rq->path))
        return false;
    char type[256], encoding[64], *path = malloc(E2B_PATH_MAX + 2);
    if (!path) {
        files_error(out, 500, "out of memory");
        return true;
    }
    bool has_path = serve_request_query(rq, "path=", path, E2B_PATH_MAX + 2);
    struct e2b_files_req f = {
        .method = rq->method,
        .route = rq->path,
        .path = has_path ? path : NULL,
        .path_len = has_path ? strlen(path) : 0,
        .content_type = serve_request_header(rq, "content-type:", type, sizeof type) > 0
                            ? type
                            : NULL,
        .content_encoding =
            serve_request_header(rq, "content-encoding:", encoding, sizeof encoding) > 0
                ? encoding
                : NULL,
        .body = rq->body,
        .len = rq->len,
        .workspace = s->reg.workspace,
        .workspaces = s->reg.workspaces != NULL,
        .max_upload = s->cfg.max_upload,
    };
    if (fs)
        e2b_fs_handle(&f, out);
    else
        e2b_files_handle(&f, out);
    free(path);
    return true;
}
