/* kernel: set up and release the request-handling state (kernel.h). */
#include "kernel/supervisor/kernel.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kernel/log.h"
#include "kernel/supervisor/shells.h"

/* The history's database: --history PATH, none with --history off, else the
 * user's default one. */
static int open_history(struct history *h, const struct options *opts)
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
    return history_open(h, db);
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
    return rc ? rc : open_history(&k->history, opts);
}

void kernel_release(struct kernel *k)
{
    shells_release(k);
    history_close(&k->history);
    json_decref(k->sandbox_report);
    k->sandbox_report = NULL;
}
