/* worker_exit: the names of the worker's exit statuses (worker_exit.h). One
 * table, so that a status and its name cannot drift apart. */
#include "kernel/link/worker_exit.h"

#include <stddef.h>
#include <stdio.h>

static const struct {
    enum worker_exit status;
    const char *name;
    const char *meaning;
} statuses[] = {
    {WORKER_EXIT_OK, "WORKER_EXIT_OK", "ended when its link closed"},
    {WORKER_EXIT_FAILED, "WORKER_EXIT_FAILED", "failed (its log says why)"},
    {WORKER_EXIT_USAGE, "WORKER_EXIT_USAGE",
     "was given a bad command line or could not enter the workspace"},
    {WORKER_EXIT_SANDBOX, "WORKER_EXIT_SANDBOX", "could not confine itself"},
    {WORKER_EXIT_PYTHON, "WORKER_EXIT_PYTHON", "could not start Python"},
    {WORKER_EXIT_OUTPUT, "WORKER_EXIT_OUTPUT", "could not capture its output"},
    {WORKER_EXIT_EXEC, "WORKER_EXIT_EXEC", "ended before its program started"},
};

const char *worker_exit_name(int status)
{
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if ((int)statuses[i].status == status)
            return statuses[i].name;
    return NULL;
}

const char *worker_exit_meaning(int status)
{
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if ((int)statuses[i].status == status)
            return statuses[i].meaning;
    return NULL;
}

void worker_exit_describe(int status, bool named, char *buf, size_t len)
{
    const char *name = named ? worker_exit_name(status) : NULL;
    if (name)
        snprintf(buf, len, "exited with status %d (%s: %s)", status, name,
                 worker_exit_meaning(status));
    else
        snprintf(buf, len, "exited with status %d", status);
}
