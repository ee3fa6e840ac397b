/* commands: a table from a subcommand's name to its main. */
#include "kernel/client/commands.h"

#include <string.h>

#include "kernel/client/lifecycle.h"
#include "kernel/client/mcp.h"
#include "kernel/client/run.h"

int commands_main(const char *cmd, int argc, char **argv, const char *version)
{
    static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
    } table[] = {
        {"start", lifecycle_start_main},
        {"stop", lifecycle_stop_main},
        {"status", lifecycle_status_main},
        {"run", run_main},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(cmd, table[i].name) == 0)
            return table[i].fn(argc, argv);
    if (strcmp(cmd, "mcp") == 0)
        return mcp_main(argc, argv, version);
    return -1;
}
