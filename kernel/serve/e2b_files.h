/* e2b_files: E2B's files API as envd serves it inside a sandbox, on the
 * server's workspace: POST /files?path=P (a multipart/form-data body with
 * one "file" part a file, or the raw bytes as application/octet-stream)
 * answered [{"path", "name", "type": "file"}], and GET /files?path=P
 * answered with the bytes; errors as {"message", "code"} (envd's Connect-RPC
 * routes are e2b_fs.c's, on the same request). Paths are mapped by e2b_path.c and
 * resolved by sandbox/tfile.h beneath a descriptor of the workspace: never outside it,
 * never through a link, never a FIFO or a device. The data flow: http.c
 * (the body within --max-upload) -> the route (e2b.c or routes.c fills a
 * struct e2b_files_req) -> here -> a struct routes_resp. Ownership: the
 * request is borrowed; what goes into out is new (http.c frees it). */
#ifndef SANDPIT_SERVE_E2B_FILES_H
#define SANDPIT_SERVE_E2B_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/serve/request.h"
#include "kernel/serve/resp.h"
#include "kernel/serve/server.h"

#define E2B_FILES_MAX_UPLOAD (100u << 20) /* --max-upload's default */
#define E2B_FILES_FRAMING    (64u << 10)  /* a body's bytes beyond its files' */
#define E2B_FILES_MAX_LIST   20000        /* entries ListDir answers at most */
#define E2B_FILES_MAX_DEPTH  16           /* levels ListDir goes down at most */

struct e2b_files_req {
    const char *method; /* GET, POST (HEAD is GET's) */
    const char *route;  /* "/files" (or e2b_fs.c's "/filesystem.Filesystem/...") */
    const char *path;   /* ?path=, decoded; NULL when absent */
    size_t path_len;
    const char *content_type;     /* or NULL */
    const char *content_encoding; /* or NULL */
    const char *body;
    size_t len;
    const char *workspace; /* absolute: the registry's */
    bool workspaces;       /* --workspaces: no one workspace to serve */
    size_t max_upload;     /* bytes of a file, written or read */
};

/* Whether route (decoded, without its query) is one of this module's. */
bool e2b_files_owns(const char *route);

/* The largest body route may have: for POST /files, max_upload and room for
 * a multipart body's framing (each file is held to max_upload itself); else
 * 0 (the server's usual bound applies). */
size_t e2b_files_body_bound(const char *method, const char *route, size_t max_upload);

/* Answers rq (whose route e2b_files_owns) into out. */
void e2b_files_handle(const struct e2b_files_req *rq, struct routes_resp *out);

/* The route: answers the request into out if its path is /files or one of
 * e2b_fs.c's (true), with the server's workspace and --max-upload; false,
 * out untouched, for any other path. */
bool e2b_files_serve(struct serve *s, const struct serve_request *rq,
                     struct routes_resp *out);

#endif
