/* lifecycle: start, stop and report on a workspace's background kernel.
 *
 * The kernel is a plain `sandpit kernel -f FILE --workspace DIR [options]`
 * process: these commands only play the part that a Jupyter client plays for
 * kernels it launches (pick the ports and key, start the process, wait until
 * it answers, ask it to shut down). What they must get right is state that
 * outlives them: the files in the runtime folder say which process is the
 * workspace's kernel, and every command checks that process is still the one
 * that was started (see instance.c) before it trusts them. */
#include "kernel/client/lifecycle.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/client/client.h"
#include "kernel/client/connfile.h"
#include "kernel/client/instance.h"
#include "kernel/client/launch.h"
#include "kernel/client/status_all.h"
#include "kernel/util/flags.h"
#include "protocol/errbuf.h"

#define START_TIMEOUT_S 60.0 /* the kernel and its first worker, on a busy machine */
#define STOP_GRACE_S    10.0
#define STATUS_WAIT_S   10.0

static int set_profile(void *base, const struct flag *f, const char *v, char *err,
                       size_t errlen)
{
    (void)f;
    return options_apply_profile(base, v, err, errlen);
}

static int refuse_connection_file(void *base, const struct flag *f, const char *v,
                                  char *err, size_t errlen)
{
    (void)base, (void)f, (void)v;
    return errbuf_set(-EINVAL, err, errlen,
                      "-f (--connection-file) is not taken here: this command writes its "
                      "own connection file");
}

static const struct flag kernel_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "profile",
     .kind = FLAG_CALL,
     .needs = "default or agent",
     .call = set_profile},
    {.name = "connection-file",
     .letter = 'f',
     .kind = FLAG_CALL,
     .call = refuse_connection_file},
};

int lifecycle_parse_kernel_options(struct options *o, const char *cmd, int argc,
                                   char **argv, char *err, size_t errlen)
{
    const struct flags fl = FLAGS_OF(cmd, kernel_flags, true);
    int rc = flags_parse(&fl, o, &argc, argv, err, errlen);
    if (!rc)
        rc = options_parse(o, argc, argv, err, errlen);
    if (!rc)
        rc = options_check(o, err, errlen);
    if (!rc) /* relative folders are where the command was given */
        rc = options_resolve_paths(o, err, errlen);
    return rc;
}

char **lifecycle_command_argv(const struct options *o, const char *const *words,
                              size_t nwords)
{
    char self[PATH_MAX];
    if (launch_self(self, sizeof self))
        return NULL;
    struct options copy = *o;
    copy.workspace = NULL; /* the caller gives it, as a real path */
    copy.connection_file = NULL;
    char **opts = NULL;
    int nopts = options_to_argv(&copy, &opts, 0);
    if (nopts < 0)
        return NULL;
    size_t nhead = nwords + 1;
    char **argv = calloc(nhead + (size_t)nopts + 1, sizeof *argv);
    bool ok = argv != NULL && (argv[0] = strdup(self)) != NULL;
    for (size_t i = 1; ok && i < nhead; i++)
        ok = (argv[i] = strdup(words[i - 1])) != NULL;
    for (int i = 0; i < nopts; i++) {
        if (ok)
            argv[nhead + (size_t)i] = opts[i];
        else
            free(opts[i]);
    }
    free(opts);
    if (!ok && argv) {
        for (size_t i = 0; i < nhead + (size_t)nopts; i++)
            free(argv[i]);
        free(argv);
        argv = NULL;
    }
    return argv;
}

char **lifecycle_kernel_argv(const struct options *o, const char *connection_file,
                             const char *workspace)
{
    const char *words[] = {"kernel", "-f", connection_file, "--workspace", workspace};
    return lifecycle_command_argv(o, words, sizeof words / sizeof words[0]);
}

static void print_log_tail(const char *cmd, const char *log)
{
    char *tail = launch_log_tail(log, 2000);
    if (tail && *tail)
        fprintf(stderr, "sandpit %s: the end of its log (%s):\n%s", cmd, log, tail);
    free(tail);
}

static void start_usage(void)
{
    printf("usage: sandpit start [--workspace DIR] [--profile default|agent] "
           "[kernel options]\n\n"
           "Starts a sandboxed kernel in the background for the workspace (by "
           "default the\ncurrent folder) and prints the path of its connection "
           "file. `sandpit run`,\n`sandpit status` and `sandpit stop` find it "
           "from the same folder.\n\nkernel options:\n");
    options_usage(stdout);
}

/* Writes the workspace's connection file and starts its kernel in the
 * background, its state recorded. 0, or -errno (said on stderr). */
static int start_kernel(struct instance *in, const struct options *o, struct launched *k)
{
    char err[1024] = "";
    char **kargv = NULL;
    int rc;
    if ((rc = connfile_write_ipc(in->connection_file, err, sizeof err)) == 1)
        fprintf(stderr, "sandpit start: the runtime folder's path is too long for ipc "
                        "sockets: the kernel listens on TCP, 127.0.0.1, where any local "
                        "process can reach it (set JUPYTER_RUNTIME_DIR to a shorter "
                        "path)\n");
    if (rc == 1)
        rc = 0;
    if (rc || !(kargv = lifecycle_kernel_argv(o, in->connection_file, in->workspace)) ||
        (rc = launch_start(k, &kargv, false, in->log_file, err, sizeof err)) ||
        (rc = instance_write_state(in, k->pid, k->argv))) {
        if (!rc)
            snprintf(err, sizeof err, "out of memory");
        else if (!*err)
            snprintf(err, sizeof err, "%s", strerror(-rc));
        fprintf(stderr, "sandpit start: %s\n", err);
        return rc ? rc : -ENOMEM;
    }
    return 0;
}

int lifecycle_start_main(int argc, char **argv)
{
    struct options o;
    struct instance in;
    struct launched k;
    struct client c;
    struct instance_state st;
    char err[1024];
    int status = 2, lock = -1, rc;
    bool client_open_ok = false;
    options_init(&o);
    launch_init(&k);
    memset(&st, 0, sizeof st);
    rc = lifecycle_parse_kernel_options(&o, "sandpit start", argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP) {
        start_usage();
        status = 0;
        goto out;
    }
    if (rc || instance_locate(&in, o.workspace, err, sizeof err)) {
        fprintf(stderr, "sandpit start: %s\n", err);
        goto out;
    }
    status = 1;
    if ((rc = instance_make_dir(&in)) || (lock = instance_lock(&in)) < 0) {
        fprintf(stderr, "sandpit start: cannot use the runtime folder %s: %s\n", in.dir,
                strerror(rc ? -rc : -lock));
        goto out;
    }
    if (instance_read_state(&in, &st) == 0 && instance_alive(st.pid, st.start_time)) {
        fprintf(stderr,
                "sandpit start: a kernel is already running for %s (pid %d); its "
                "options stay as they were (`sandpit stop` first to change them)\n",
                in.workspace, (int)st.pid);
        printf("%s\n", in.connection_file);
        status = 0;
        goto out;
    }
    instance_remove(&in, true); /* a kernel that died: its files are stale */
    if (start_kernel(&in, &o, &k))
        goto fail;
    if ((rc = client_open(&c, in.connection_file, err, sizeof err)) == 0) {
        client_open_ok = true;
        rc = launch_wait_ready(&k, &c, START_TIMEOUT_S, NULL, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "sandpit start: %s\n", err);
        print_log_tail("start", in.log_file);
        goto fail;
    }
    printf("%s\n", in.connection_file);
    status = 0;
    goto out;
fail:
    if (k.pid > 0)
        launch_stop(&k, NULL, 0);
    instance_remove(&in, false);
out:
    if (client_open_ok)
        client_close(&c);
    if (lock >= 0)
        close(lock);
    instance_state_release(&st);
    launch_release(&k);
    options_release(&o);
    return status;
}

/* The options of stop and status: --workspace DIR, -f FILE, and status's --json
 * and --all. */
struct target {
    const char *workspace;
    const char *connection_file;
    bool json, all;
};

#define OFF(f) offsetof(struct target, f)

static const struct flag target_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "workspace",
     .kind = FLAG_TEXT,
     .needs = "a folder",
     .offset = OFF(workspace)},
    {.name = "connection-file",
     .letter = 'f',
     .kind = FLAG_TEXT,
     .needs = "the path of a connection file",
     .offset = OFF(connection_file)},
    /* the last two: status only */
    {.name = "json", .kind = FLAG_SWITCH, .offset = OFF(json)},
    {.name = "all", .kind = FLAG_SWITCH, .offset = OFF(all)},
};

/* 0, 1 after --help, or -EINVAL (said on stderr). */
static int parse_target(const char *cmd, int argc, char **argv, struct target *t,
                        bool of_status)
{
    char name[32], err[256];
    struct flags fl = FLAGS_OF(name, target_flags, false);
    memset(t, 0, sizeof *t);
    snprintf(name, sizeof name, "sandpit %s", cmd);
    fl.n -= of_status ? 0 : 2;
    int rc = flags_parse(&fl, t, &argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP)
        printf("usage: sandpit %s [--workspace DIR | --connection-file FILE]%s\n", cmd,
               of_status ? " [--json]" : "");
    else if (rc)
        fprintf(stderr, "sandpit %s: %s\n", cmd, err);
    return rc == FLAGS_HELP ? 1 : rc ? -EINVAL : 0;
}

/* Stops a kernel we did not start, the one of the connection file conn: asks
 * it to shut down, and waits for the reply. The exit status. */
static int stop_other(const char *conn)
{
    struct client c;
    char err[1024];
    if (client_open(&c, conn, err, sizeof err)) {
        fprintf(stderr, "sandpit stop: %s\n", err);
        return 1;
    }
    json_t *content = json_pack("{s:b}", "restart", 0);
    char id[CLIENT_ID_LEN];
    struct client_wait w = {.timeout_s = STOP_GRACE_S, .skip_idle = true};
    struct msg *reply = NULL;
    int rc = client_send(&c, CONNECTION_CONTROL, "shutdown_request", &content, NULL, id);
    if (!rc)
        rc = client_wait(&c, CONNECTION_CONTROL, id, &w, &reply);
    msg_free(reply);
    client_close(&c);
    if (rc) {
        fprintf(stderr, "sandpit stop: the kernel did not answer: %s\n", strerror(-rc));
        return 1;
    }
    printf("sandpit stop: the kernel of %s has been asked to shut down\n", conn);
    return 0;
}

int lifecycle_stop_main(int argc, char **argv)
{
    struct target t;
    int rc = parse_target("stop", argc, argv, &t, false);
    if (rc)
        return rc > 0 ? 0 : 2;
    struct instance in;
    struct instance_state st;
    struct launched k;
    struct client c;
    char err[1024];
    int status = 1, lock = -1;
    memset(&st, 0, sizeof st);
    launch_init(&k);
    if (instance_locate(&in, t.workspace, err, sizeof err)) {
        fprintf(stderr, "sandpit stop: %s\n", err);
        return 2;
    }
    if (t.connection_file)
        return stop_other(t.connection_file);
    if ((lock = instance_lock(&in)) < 0) {
        fprintf(stderr, "sandpit stop: no kernel is running for %s\n", in.workspace);
        return 1;
    }
    rc = instance_read_state(&in, &st);
    if (rc == -ENOENT) {
        fprintf(stderr, "sandpit stop: no kernel is running for %s\n", in.workspace);
        instance_remove_lock(&in);
        goto out;
    }
    if (rc || !instance_alive(st.pid, st.start_time)) {
        instance_remove_all(&in);
        printf("sandpit stop: the kernel of %s was not running (its files are "
               "removed)\n",
               in.workspace);
        status = 0;
        goto out;
    }
    launch_attach(&k, st.pid, st.argv, NULL);
    bool open = client_open(&c, in.connection_file, err, sizeof err) == 0;
    rc = launch_stop(&k, open ? &c : NULL, STOP_GRACE_S);
    if (open)
        client_close(&c);
    if (rc) {
        fprintf(stderr, "sandpit stop: the kernel (pid %d) would not stop\n",
                (int)st.pid);
        goto out;
    }
    instance_remove_all(&in);
    printf("sandpit stop: stopped the kernel of %s (pid %d)\n", in.workspace,
           (int)st.pid);
    status = 0;
out:
    if (lock >= 0)
        close(lock);
    instance_state_release(&st);
    launch_release(&k);
    return status;
}

static const char *or_unknown(const char *s)
{
    return s ? s : "?";
}

static void print_limit(const char *name, const json_t *v, const char *unit)
{
    double x = json_number_value(v);
    if (x > 0)
        printf(x == (double)(long long)x ? "  %-16s %.0f%s\n" : "  %-16s %g%s\n", name, x,
               unit); /* 16777216, not 1.67772e+07 */
    else
        printf("  %-16s none\n", name);
}

static void print_status_text(const json_t *s)
{
    const char *ws = json_string_value(json_object_get(s, "workspace"));
    json_t *pid = json_object_get(s, "pid");
    if (!json_is_true(json_object_get(s, "live"))) {
        if (json_is_integer(pid))
            printf("sandpit kernel for %s: pid %lld is there but does not answer\n",
                   ws ? ws : "?", (long long)json_integer_value(pid));
        else
            printf("sandpit kernel for %s: not running\n", ws ? ws : "?");
        return;
    }
    if (json_is_integer(pid))
        printf("sandpit kernel for %s: running, pid %lld\n", ws,
               (long long)json_integer_value(pid));
    else
        printf("sandpit kernel for %s: running\n", ws);
    printf("  connection file  %s\n",
           json_string_value(json_object_get(s, "connection_file")));
    json_t *run = json_object_get(s, "running");
    if (json_is_object(run))
        printf("  busy             cell [%lld] running for %.0f s, %lld waiting\n",
               (long long)json_integer_value(json_object_get(run, "execution_count")),
               json_number_value(json_object_get(run, "seconds")),
               (long long)json_integer_value(json_object_get(run, "queued")));
    else if (json_is_false(json_object_get(s, "busy")))
        printf("  idle\n");
    const char *log = json_string_value(json_object_get(s, "log"));
    if (log)
        printf("  log              %s\n", log);
    printf("  Python %s, %s %s\n",
           or_unknown(json_string_value(json_object_get(s, "python_version"))),
           or_unknown(json_string_value(json_object_get(s, "implementation"))),
           or_unknown(json_string_value(json_object_get(s, "implementation_version"))));
    json_t *lim = json_object_get(s, "limits");
    if (json_is_object(lim)) {
        printf("limits:\n");
        print_limit("time per cell", json_object_get(lim, "timeout"), " s");
        print_limit("memory", json_object_get(lim, "memory_mib"), " MiB");
        print_limit("completion", json_object_get(lim, "introspection_timeout"), " s");
        print_limit("output per cell", json_object_get(lim, "max_output_bytes"),
                    " bytes");
        print_limit("images per cell", json_object_get(lim, "max_image_output_bytes"),
                    " bytes");
        print_limit("file size", json_object_get(lim, "max_file_mib"), " MiB");
        printf("  %-16s %s\n", "network",
               json_is_true(json_object_get(lim, "network")) ? "on" : "off");
    }
    json_t *counts = json_object_get(s, "counts");
    if (json_is_object(counts))
        printf("counts: %lld cells, %lld timed out, %lld out of memory, %lld worker "
               "restarts\n",
               json_integer_value(json_object_get(counts, "cells")),
               json_integer_value(json_object_get(counts, "timeouts")),
               json_integer_value(json_object_get(counts, "out_of_memory")),
               json_integer_value(json_object_get(counts, "worker_restarts")));
    json_t *layers = json_object_get(s, "layers");
    if (json_is_array(layers)) {
        printf("sandbox (%s):\n",
               json_is_true(json_object_get(lim, "sandbox")) ? "on" : "off");
        size_t i;
        json_t *l;
        json_array_foreach(layers, i, l) {
            const char *detail = json_string_value(json_object_get(l, "detail"));
            printf("  %-18s %-12s %s\n",
                   or_unknown(json_string_value(json_object_get(l, "name"))),
                   or_unknown(json_string_value(json_object_get(l, "state"))),
                   detail ? detail : "");
        }
    }
}

/* What status reports from the kernel's kernel_info_reply (content ic). */
static void add_kernel_info(json_t *s, const json_t *ic)
{
    json_t *sp = json_object_get(ic, "sandpit");
    json_object_set_new(s, "live", json_true());
    json_object_set(s, "implementation", json_object_get(ic, "implementation"));
    json_object_set(s, "implementation_version",
                    json_object_get(ic, "implementation_version"));
    json_object_set(s, "python_version",
                    json_object_get(json_object_get(ic, "language_info"), "version"));
    if (!json_is_object(sp))
        return;
    json_t *lim = json_pack(
        "{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "timeout",
        json_object_get(sp, "timeout"), "introspection_timeout",
        json_object_get(sp, "introspection_timeout"), "memory_mib",
        json_object_get(sp, "memory_mib"), "max_output_bytes",
        json_object_get(sp, "max_output_bytes"), "max_image_output_bytes",
        json_object_get(sp, "max_image_output_bytes"), "max_file_mib",
        json_object_get(sp, "max_file_mib"), "network", json_object_get(sp, "network"),
        "sandbox", json_object_get(sp, "enabled"));
    json_object_set_new(s, "limits", lim ? lim : json_null());
    json_object_set(s, "layers", json_object_get(sp, "layers"));
    json_object_set(s, "counts", json_object_get(sp, "counts"));
    json_t *run = json_object_get(sp, "running");
    json_object_set_new(s, "busy", json_boolean(json_is_object(run)));
    json_object_set(s, "running", json_is_object(run) ? run : json_null());
}

int lifecycle_status_main(int argc, char **argv)
{
    struct target t;
    int rc = parse_target("status", argc, argv, &t, true);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (t.all) /* every kernel: its own flags, checked there */
        return status_all_main(argc, argv);
    struct instance in;
    struct instance_state st;
    struct launched k;
    char err[1024];
    memset(&st, 0, sizeof st);
    launch_init(&k);
    int found = t.connection_file
                    ? instance_locate(&in, t.workspace, err, sizeof err)
                    : instance_find_running(&in, t.workspace, &st, err, sizeof err);
    if (found < 0) {
        fprintf(stderr, "sandpit status: %s\n", err);
        if (t.json) {
            json_t *j = json_pack("{s:b, s:s, s:s}", "live", 0, "status", "unavailable",
                                  "reason", err);
            char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
            printf("%s\n", text ? text : "{\"live\": false}");
            free(text);
            json_decref(j);
        }
        return 2;
    }
    if (found == 1)
        fprintf(stderr, "sandpit status: the kernel of the enclosing workspace %s\n",
                in.workspace);
    const char *conn = t.connection_file ? t.connection_file : in.connection_file;
    json_t *s = json_pack("{s:b, s:s, s:s}", "live", 0, "workspace", in.workspace,
                          "connection_file", conn);
    bool alive = false, ours = !t.connection_file;
    if (ours && found < 2) {
        alive = true;
        json_object_set_new(s, "pid", json_integer(st.pid));
        json_object_set_new(s, "log", json_string(in.log_file));
        launch_attach(&k, st.pid, NULL, NULL);
    }
    if (alive || t.connection_file) {
        struct client c;
        struct msg *info = NULL;
        if (client_open(&c, conn, err, sizeof err) == 0) {
            /* On control: a kernel that runs a long cell still answers there. */
            struct client_wait w = {.timeout_s = STATUS_WAIT_S,
                                    .fds = &k.pidfd,
                                    .nfds = k.pidfd >= 0,
                                    .on_control = true};
            if (client_ready(&c, &w, &info) == 0)
                add_kernel_info(s, info->content);
            msg_free(info);
            client_close(&c);
        }
    }
    if (t.json) {
        char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text ? text : "{}");
        free(text);
    } else {
        print_status_text(s);
    }
    rc = json_is_true(json_object_get(s, "live")) ? 0 : 1;
    json_decref(s);
    instance_state_release(&st);
    launch_release(&k);
    return rc;
}
