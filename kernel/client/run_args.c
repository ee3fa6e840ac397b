/* run_args: the flags of `sandpit run`, its help, and the checks of what goes
 * together (code as an argument or from a file, a workspace or a connection
 * file). */
#include "kernel/client/run_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/flags.h"
#include "protocol/errbuf.h"

static int set_timeout(void *base, const struct flag *f, const char *v, char *err,
                       size_t errlen)
{
    struct run_args *a = base;
    char *end = NULL;
    (void)f;
    a->timeout_s = strtod(v, &end);
    if (end == v || *end || !(a->timeout_s > 0) || a->timeout_s > 1e7)
        return errbuf_set(-EINVAL, err, errlen,
                          "--timeout needs a number of seconds, not \"%s\"", v);
    return 0;
}

static int set_max_chars(void *base, const struct flag *f, const char *v, char *err,
                         size_t errlen)
{
    struct run_args *a = base;
    char *end = NULL;
    (void)f;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || v[0] == '-')
        return errbuf_set(-EINVAL, err, errlen,
                          "--max-chars needs a whole number, not "
                          "\"%s\"",
                          v);
    a->max_chars = (size_t)n;
    return 0;
}

static int set_code(void *base, const struct flag *f, const char *v, char *err,
                    size_t errlen)
{
    struct run_args *a = base;
    (void)f;
    if (a->code)
        return errbuf_set(-EINVAL, err, errlen,
                          "give the code as one argument (quote it), with -f FILE, or "
                          "on standard input");
    a->code = v;
    return 0;
}

#define STR_(x) #x
#define STR(x)  STR_(x)
#define OFF(f)  offsetof(struct run_args, f)

static const struct flag run_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "json",
     .kind = FLAG_SWITCH,
     .offset = OFF(json),
     .help = "print one JSON object: status, execution_count, stdout,\n"
             "stderr, result, error, outputs, files"},
    {.name = "outdir",
     .kind = FLAG_TEXT,
     .needs = "a value",
     .offset = OFF(outdir),
     .metavar = "DIR",
     .help = "where images go, as cell-N-K.png (default: outputs/ in\nthe workspace)"},
    {.name = "max-chars",
     .kind = FLAG_CALL,
     .needs = "a value",
     .call = set_max_chars,
     .metavar = "N",
     .help = "cut each stream and text to N characters, keeping its\n"
             "beginning and end and saying how many were cut (as\n"
             "text, the end comes when the cell ends; default " STR(
                 RUN_DEFAULT_MAX_CHARS) ";\n0: no limit)"},
    {.name = "timeout",
     .kind = FLAG_CALL,
     .needs = "a value",
     .call = set_timeout,
     .metavar = "S",
     .help = "a time limit for this cell (tightens the kernel's own)"},
    {.name = "interrupt",
     .kind = FLAG_SWITCH,
     .offset = OFF(interrupt),
     .help = "interrupt the cell that is running first"},
    {.name = "restart",
     .kind = FLAG_SWITCH,
     .offset = OFF(restart),
     .help = "restart the interpreter first (its variables are lost)"},
    {.name = "connection-file",
     .kind = FLAG_TEXT,
     .needs = "a value",
     .offset = OFF(connection_file)},
    {.name = "workspace",
     .kind = FLAG_TEXT,
     .needs = "a value",
     .offset = OFF(workspace)},
    {.name = "file",
     .letter = 'f',
     .kind = FLAG_TEXT,
     .needs = "a value",
     .offset = OFF(code_file)},
    {.name = NULL, .kind = FLAG_CALL, .call = set_code},
};

static const struct flags run_table = FLAGS_OF("sandpit run", run_flags, false);

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: sandpit run [CODE | -f FILE] [--json] [--outdir DIR] [--max-chars N]\n"
        "                   [--timeout S] [--interrupt] [--restart]\n"
        "                   [--workspace DIR | --connection-file FILE]\n\n"
        "Runs one cell in the kernel that `sandpit start` launched for the workspace\n"
        "(by default the current folder), or in the kernel of a connection file. The\n"
        "code is CODE, the contents of FILE, or standard input (-f - or no code).\n\n");
    flags_usage(f, &run_table, 18);
    fprintf(
        f,
        "\nExit status: 0 when the cell succeeded, 1 when it failed, 2 when it could "
        "not\n"
        "be run (with --json, {\"status\": \"unavailable\", \"reason\": ...}). Ctrl-C\n"
        "interrupts the cell; SIGTERM and SIGHUP interrupt it and end the command. A\n"
        "folder with no kernel of its own uses the nearest enclosing one's.\n");
}

int run_args_parse(struct run_args *a, int argc, char **argv)
{
    char err[256];
    memset(a, 0, sizeof *a);
    a->max_chars = RUN_DEFAULT_MAX_CHARS;
    int rc = flags_parse(&run_table, a, &argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP)
        usage(stdout);
    else if (rc)
        fprintf(stderr, "sandpit run: %s\n", err);
    if (rc)
        return rc == FLAGS_HELP ? 1 : -EINVAL;
    if (a->code && a->code_file) {
        fprintf(stderr,
                "sandpit run: give the code as an argument or with -f, not both\n");
        return -EINVAL;
    }
    if (a->connection_file && a->workspace) {
        fprintf(stderr, "sandpit run: --workspace and --connection-file name two "
                        "kernels: give one\n");
        return -EINVAL;
    }
    return 0;
}
