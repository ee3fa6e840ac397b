/* sandpit: a Jupyter kernel in C that runs Python in a sandboxed worker.
 *
 *   sandpit kernel -f CONNECTION_FILE [options]   the kernel (from kernel.json)
 *   sandpit kernel --RemoteProcessProxy.* ...     the same, started by Enterprise
 *                                                 Gateway (kernel/cmd/launcher.h)
 *   sandpit install [--user | --prefix DIR] ...   write a kernelspec
 *   sandpit uninstall | list                      remove one, list them
 *   sandpit check-sandbox                         what the sandbox can do here
 *   sandpit start|stop|status|run|mcp ...         the clients (kernel/client/)
 *
 * The worker is Python's own program run with sandpit-worker.so, installed
 * beside this one (kernel/worker_preload.c); under the sanitizers, a program
 * of its own, sandpit-worker (kernel/worker_main.c).
 *
 * The kernel's stdout is never written to: in kernel mode everything goes
 * to the log on stderr. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel/client/commands.h"
#include "kernel/client/launch.h"
#include "kernel/cmd/launcher.h"
#include "kernel/util/userdir.h"
#include "kernel/cmd/install.h"
#include "kernel/cmd/kernelspecs.h"
#include "kernel/util/log.h"
#include "kernel/options.h"
#include "kernel/supervisor/worker_lifecycle.h"
#include "kernel/supervisor/supervisor.h"
#include "kernel/version.h"
#include "sandbox/home.h"
#include "sandbox/sandbox.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "sandpit %s: a Jupyter kernel that runs Python in a sandbox\n\n"
        "usage:\n"
        "  sandpit kernel -f CONNECTION_FILE [options]\n"
        "  sandpit kernel --RemoteProcessProxy.kernel-id ID\n"
        "                 --RemoteProcessProxy.response-address HOST:PORT\n"
        "                 --RemoteProcessProxy.public-key KEY\n"
        "                 [--RemoteProcessProxy.port-range LOW..HIGH] [options]\n"
        "                 (started by Jupyter Enterprise Gateway)\n"
        "  sandpit install [--user | --prefix DIR] [--name NAME] [--display-name TEXT]\n"
        "                  [--profile default|agent] [--interrupt-mode message|signal]\n"
        "                  [--enterprise-gateway distributed|kubernetes [--image NAME]]\n"
        "                  [options]\n"
        "  sandpit uninstall [--user | --prefix DIR] [--name NAME]\n"
        "  sandpit list\n"
        "  sandpit check-sandbox [options]\n"
        "  sandpit start [--workspace DIR] [--profile default|agent] [options]\n"
        "  sandpit run [CODE | -f FILE] [--json] ...   (sandpit run --help)\n"
        "  sandpit status [--json] | sandpit stop\n"
        "  sandpit mcp [--workspace DIR] [--profile default|agent] [options]\n"
        "  sandpit serve [--ip ADDR] [--port N] [--token T] ...   (sandpit serve "
        "--help)\n"
        "  sandpit --version\n\n"
        "Exit status: 0 on success, 1 when the command failed, 2 for a wrong command\n"
        "line (sandpit run: 1 when the cell failed, 2 when it could not run).\n\n"
        "options:\n",
        SANDPIT_VERSION);
    options_usage(f);
}

static int kernel_main(int argc, char **argv)
{
    struct options o;
    struct launcher gw;
    options_init(&o);
    launcher_init(&gw);
    char err[512];
    int status = 2;
    if (launcher_take_options(&gw, &argc, argv, err, sizeof err) ||
        (gw.enabled && launcher_check(&gw, err, sizeof err))) {
        fprintf(stderr, "sandpit kernel: %s\n", err);
        goto out;
    }
    /* From here a gateway's kernel logs its errors with its id, user and date. */
    if (gw.enabled)
        userdir_log_start(gw.kernel_id);
    if (options_parse(&o, argc, argv, err, sizeof err) ||
        options_check(&o, err, sizeof err) || userdir_apply(&o, err, sizeof err)) {
        if (gw.enabled)
            log_error("sandpit kernel: %s", err);
        else
            fprintf(stderr, "sandpit kernel: %s\n", err);
        goto out;
    }
    if (gw.enabled && o.connection_file) {
        fprintf(stderr, "sandpit kernel: -f and the gateway's --RemoteProcessProxy "
                        "options cannot be used together\n");
        goto out;
    }
    if (!gw.enabled && !o.connection_file) {
        fprintf(stderr, "sandpit kernel: -f CONNECTION_FILE is required\n");
        goto out;
    }
    log_init("kernel", o.log_level, 2);
    if (gw.enabled) {
        if (launcher_prepare(&gw, err, sizeof err) ||
            !(o.connection_file = strdup(gw.connection_file))) {
            log_error("sandpit kernel: %s", err);
            status = 1;
            goto out;
        }
        log_info("the connection file is %s", gw.connection_file);
    }
    if (!o.sandbox)
        log_warn("the sandbox is off (--sandbox off): code runs with all the rights of "
                 "the user who started the kernel");
    status = supervisor_run(&o, gw.enabled ? &gw : NULL);
out:
    if (gw.enabled && !gw.reported && gw.response_address)
        launcher_log_unreported(&gw);
    launcher_release(&gw);
    options_release(&o);
    return status;
}

static int check_sandbox_main(int argc, char **argv)
{
    struct options o;
    options_init(&o);
    char err[512];
    if (options_parse(&o, argc, argv, err, sizeof err)) {
        fprintf(stderr, "sandpit check-sandbox: %s\n", err);
        return 2;
    }
    struct sandbox_policy p;
    struct sandbox_report r;
    sandbox_policy_init(&p);
    p.enabled = o.sandbox;
    p.network = o.network;
    p.workspace = "/tmp";
    p.tmpdir = "/tmp";
    p.memory_bytes = (uint64_t)o.memory_mib << 20;
    p.cpus = o.cpus;
    /* What a worker would mask of the user's setup (home.h), from this environment. */
    extern char **environ;
    struct sandbox_masks masks;
    if (sandbox_masks_build(&masks, &p, environ, false) == 0) {
        p.hidden_paths = (const char *const *)masks.hidden;
        p.readonly_paths = (const char *const *)masks.readonly;
        p.home_dirs = (const char *const *)masks.homes;
    }
    memset(&r, 0, sizeof r);
    int rc = sandbox_probe(&p, &r);
    sandbox_masks_release(&masks);
    if (rc) {
        fprintf(stderr, "sandpit check-sandbox: %s\n", strerror(-rc));
        options_release(&o);
        return 1;
    }
    /* The layers are the worker's: none is in force if it cannot start. */
    char worker[PATH_MAX], why[PATH_MAX + 256];
    if (respawn_worker_program(worker, sizeof worker, why, sizeof why)) {
        printf("sandpit %s sandbox on this machine: none, the worker cannot start: %s\n",
               SANDPIT_VERSION, why);
        options_release(&o);
        return 1;
    }
    printf("sandpit %s sandbox on this machine:\n", SANDPIT_VERSION);
    sandbox_report_print(&r, stdout);
    options_release(&o);
    return 0;
}

/* `sandpit serve`: the gateway's own program, beside this one (kernel/serve_main.c),
 * with args (args[0] is "serve", replaced by the program's path). Returns only
 * when it cannot be run. */
static int serve_exec(char **args)
{
    char self[PATH_MAX], program[PATH_MAX + 16];
    if (launch_self(self, sizeof self) != 0) {
        fprintf(stderr, "sandpit serve: cannot find sandpit's own program\n");
        return 1;
    }
    char *slash = strrchr(self, '/');
    snprintf(program, sizeof program, "%.*s/sandpit-serve",
             slash ? (int)(slash - self) : 1, slash ? self : ".");
    args[0] = program;
    execv(program, args);
    fprintf(stderr,
            "sandpit serve: cannot run %s (%s): it is installed beside sandpit (make "
            "install puts both in place)\n",
            program, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "kernel") == 0)
        return kernel_main(argc - 1, argv + 1);
    if (strcmp(cmd, "install") == 0)
        return install_main(argc - 1, argv + 1);
    if (strcmp(cmd, "uninstall") == 0)
        return kernelspecs_uninstall_main(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0)
        return kernelspecs_list_main(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return serve_exec(argv + 1);
    if (strcmp(cmd, "check-sandbox") == 0)
        return check_sandbox_main(argc - 1, argv + 1);
    int client_status = commands_main(cmd, argc - 1, argv + 1, SANDPIT_VERSION);
    if (client_status >= 0)
        return client_status;
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
#if defined(__SANITIZE_ADDRESS__)
        printf("sandpit %s (Python %s, AddressSanitizer build)\n", SANDPIT_VERSION,
               SANDPIT_PY_VERSION);
#else
        printf("sandpit %s (Python %s)\n", SANDPIT_VERSION, SANDPIT_PY_VERSION);
#endif
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "sandpit: unknown command \"%s\"\n\n", cmd);
    usage(stderr);
    return 2;
}
