/* kernel: set up and release the request-handling state (kernel.h). */
#include "kernel/supervisor/kernel.h"

#include <stdio.h>
#include <string.h>

#include "kernel/supervisor/shells.h"

int kernel_init(struct kernel *k, const struct options *opts, const char *workspace,
                const char *username)
{
    memset(k, 0, sizeof *k);
    k->opts = opts;
    k->workspace = workspace;
    shells_init(k);
    history_init(&k->history, 0);
    snprintf(k->python_version, sizeof k->python_version, "%s", SANDPIT_PY_VERSION);
    return msg_session_init(&k->session, username);
}

void kernel_release(struct kernel *k)
{
    shells_release(k);
    history_release(&k->history);
    json_decref(k->sandbox_report);
    k->sandbox_report = NULL;
}
