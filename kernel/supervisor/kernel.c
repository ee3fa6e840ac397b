/* kernel: set up and release the request-handling state (kernel.h). */
#include "kernel/supervisor/kernel.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/fsutil.h"
#include "kernel/util/log.h"
#include "kernel/supervisor/loop.h"
#include "kernel/supervisor/shells.h"
#include "sandbox/home.h"

int kernel_prepare_history(struct options *opts)
{
    char path[PATH_MAX], dir[PATH_MAX], real[PATH_MAX];
    if (opts->history && strcmp(opts->history, "off") == 0)
        return 0;
    bool chosen = opts->history != NULL;
    if (!opts->history && history_default_path(path, sizeof path) != 0) {
        log_warn("history: no Jupyter data folder (HOME is not set): this kernel keeps "
                 "its history in memory");
        path[0] = 0;
    } else if (opts->history) {
        snprintf(path, sizeof path, "%s", opts->history);
    }
    char *slash = strrchr(path, '/');
    if (path[0] && slash && slash != path) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        fsutil_mkdir_p(dir, 0700); /* if it fails, opening says why */
        if (!realpath(dir, real) ||
            snprintf(path, sizeof path, "%s%s", real, slash) >= (int)sizeof path)
            return 0; /* the history's opening says why */
        /* A folder inside the workspace is covered by its path, and a cell
         * could move a folder above it and have the next worker cover nothing
         * (the default one lies in the Jupyter data folder, which home.c makes
         * read-only, so that it stays where it is). */
        bool inside = sandbox_path_beneath(real, opts->workspace) ||
                      sandbox_path_beneath(real, opts->tmpdir);
        if (sandbox_path_beneath(opts->workspace, real) ||
            sandbox_path_beneath(opts->tmpdir, real) || (chosen && inside)) {
            log_warn("history: the folder of %s %s, so it cannot be hidden from cells: "
                     "this kernel keeps its history in memory (give --history a folder "
                     "of its own, outside the workspace)",
                     path,
                     inside ? "lies in the workspace or the kernel's temporary folder"
                            : "holds the workspace or the kernel's temporary folder");
            path[0] = 0;
        }
    }
    char *v = strdup(path[0] ? path : "off");
    if (!v)
        return -ENOMEM;
    free(opts->history);
    opts->history = v;
    return 0;
}

/* The history's database: --history PATH, none with --history off, else the
 * user's default one. */
static int open_history(struct history *h, const struct options *opts,
                        const char *workspace)
{
    char path[PATH_MAX];
    const char *db = opts->history;
    if (!db && history_default_path(path, sizeof path) == 0)
        db = path;
    else if (!db)
        log_warn("history: no Jupyter data folder (HOME is not set): this kernel keeps "
                 "its history in memory");
    if (db && strcmp(db, "off") == 0)
        db = NULL;
    return history_open(h, db, workspace);
}

int kernel_init(struct kernel *k, const struct options *opts, const char *workspace,
                const char *username)
{
    memset(k, 0, sizeof *k);
    k->opts = opts;
    k->workspace = workspace;
    shells_init(k);
    snprintf(k->python_version, sizeof k->python_version, "%s", SANDPIT_PY_VERSION);
    int rc = msg_session_init(&k->session, username);
    return rc ? rc : open_history(&k->history, opts, workspace);
}

void kernel_release(struct kernel *k)
{
    shells_release(k);
    if (k->history_event > 0)
        loop_del_file(k->loop, k->history_event);
    history_close(&k->history); /* the answers not yet given are dropped */
    json_decref(k->sandbox_report);
    k->sandbox_report = NULL;
}
