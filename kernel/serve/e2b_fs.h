/* e2b_fs: envd's Connect-RPC filesystem service, the two calls that read:
 * POST /filesystem.Filesystem/ListDir {"path", "depth"} -> {"entries": [..]}
 * and POST /filesystem.Filesystem/Stat {"path"} -> {"entry": {..}}, in
 * Connect's JSON form (what E2B's SDK sends: files.list, files.getInfo,
 * files.exists); every other call of the service is answered 501
 * "unimplemented". Errors are Connect's {"code", "message"} with the HTTP
 * status Connect maps the code to. Paths as in e2b_files.c: mapped by
 * e2b_path.c, every folder opened by sandbox/tfile.h beneath the
 * workspace's descriptor; a link is listed (with its target), never
 * followed; listings are bounded (E2B_FILES_MAX_LIST entries,
 * E2B_FILES_MAX_DEPTH levels). Ownership as in e2b_files.h. */
#ifndef SANDPIT_SERVE_E2B_FS_H
#define SANDPIT_SERVE_E2B_FS_H

#include <stdbool.h>

#include "kernel/serve/e2b_files.h"
#include "kernel/serve/resp.h"

/* Whether route is one of the service's ("/filesystem.Filesystem/..."). */
bool e2b_fs_owns(const char *route);

/* Answers rq (whose route e2b_fs_owns) into out. */
void e2b_fs_handle(const struct e2b_files_req *rq, struct routes_resp *out);

#endif
