/* install: write a kernelspec for this binary.
 *
 * Where it goes follows `jupyter kernelspec install`: --user puts it in the
 * user's Jupyter data folder (JUPYTER_DATA_DIR, else XDG_DATA_HOME/jupyter,
 * else ~/.local/share/jupyter), --prefix DIR under DIR/share/jupyter, and by
 * default the system-wide /usr/local/share/jupyter. Relative folders among
 * the options (--workspace, --venv, --read, --history) are made absolute: the kernel
 * starts in the notebook's folder, not in this one. The kernel's options
 * (limits, sandbox, network) are written into argv, so a kernelspec is a
 * complete description of how its kernels run. */
#include "kernel/cmd/install.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/embedded.h"
#include "kernel/util/flags.h"
#include "kernel/util/fsutil.h"
#include "kernel/cmd/launcher_spec.h"
#include "kernel/options.h"
#include "kernel/supervisor/worker_lifecycle.h"
#include "sandbox/tfile.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: sandpit install [--user | --prefix DIR] [--name NAME]\n"
           "                       [--display-name TEXT] [--profile default|agent]\n"
           "                       [--interrupt-mode message|signal] [kernel options]\n"
           "                       [--enterprise-gateway distributed|kubernetes]\n"
           "                       [--image NAME]\n\n"
           "Writes a Jupyter kernelspec that starts this sandpit binary: for every user\n"
           "(in /usr/local/share/jupyter) unless --user (the Jupyter data folder) or\n"
           "--prefix DIR (DIR/share/jupyter) says otherwise. `sandpit list` shows the\n"
           "kernelspecs installed, `sandpit uninstall` removes one. With\n"
           "--enterprise-gateway, the kernelspec is for Jupyter Enterprise Gateway's\n"
           "DistributedProcessProxy (kernels on hosts reached over SSH) or\n"
           "KubernetesProcessProxy (kernels in pods of the image NAME, "
           "default " LAUNCHER_SPEC_DEFAULT_IMAGE ").\n\n"
           "kernel options (written into the kernelspec's argv):\n");
    options_usage(f);
}

int install_data_dir(bool user, const char *prefix, char *out, size_t len)
{
    int n;
    if (prefix)
        n = snprintf(out, len, "%s/share/jupyter", prefix);
    else if (!user)
        n = snprintf(out, len, "%s", INSTALL_SYSTEM_DIR);
    else
        return fsutil_jupyter_data_dir(out, len);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

bool install_valid_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

/* A relative --workspace is the folder's where the command was given, not the
 * notebook's where a kernel will start; it need not exist yet (a gateway's host
 * may make it). 0 or -errno. */
static int absolute_workspace(struct options *o)
{
    char cwd[PATH_MAX], *abs = NULL;
    if (!o->workspace || o->workspace[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof cwd))
        return -errno;
    const char *rel = o->workspace;
    while (rel[0] == '.' && (rel[1] == '/' || rel[1] == 0)) /* "." and "./x" */
        rel += rel[1] ? 2 : 1;
    while (*rel == '/')
        rel++;
    if (asprintf(&abs, "%s%s%s", cwd, *rel && strcmp(cwd, "/") != 0 ? "/" : "", rel) < 0)
        return -ENOMEM;
    free(o->workspace);
    o->workspace = abs;
    return 0;
}

/* The command line of install: its own flags, then the kernel's options. */
struct install_args {
    bool user, agent, help;
    const char *prefix, *name, *display, *interrupt_mode, *gateway, *image;
    struct options *o;
    char gw_name[80], gw_display[128]; /* the default names with the gateway's kind */
};

static int set_profile(void *base, const struct flag *f, const char *v, char *err,
                       size_t errlen)
{
    struct install_args *a = base;
    (void)f;
    a->agent = strcmp(v, "agent") == 0;
    return options_apply_profile(a->o, v, err, errlen);
}

#define OFF(f) offsetof(struct install_args, f)

static const struct flag install_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "user", .kind = FLAG_SWITCH, .offset = OFF(user)},
    {.name = "prefix", .kind = FLAG_TEXT, .needs = "a folder", .offset = OFF(prefix)},
    {.name = "name", .kind = FLAG_TEXT, .needs = "a name", .offset = OFF(name)},
    {.name = "display-name",
     .kind = FLAG_TEXT,
     .needs = "a text",
     .offset = OFF(display)},
    {.name = "interrupt-mode",
     .kind = FLAG_TEXT,
     .needs = "message or signal",
     .offset = OFF(interrupt_mode)},
    {.name = "enterprise-gateway",
     .kind = FLAG_TEXT,
     .needs = "distributed or kubernetes",
     .offset = OFF(gateway)},
    {.name = "image", .kind = FLAG_TEXT, .needs = "an image name", .offset = OFF(image)},
    {.name = "profile",
     .kind = FLAG_CALL,
     .needs = "default or agent",
     .call = set_profile},
};

/* The kernelspec's name and display name, from the profile and the gateway's
 * kind unless given. 0, or -EINVAL (said on stderr). */
static int default_names(struct install_args *a)
{
    if (!a->name) {
        a->name = a->agent ? "sandpit-agent" : "sandpit";
        if (a->gateway &&
            snprintf(a->gw_name, sizeof a->gw_name, "%s-%s", a->name, a->gateway) > 0)
            a->name = a->gw_name;
    }
    if (!a->display) {
        a->display = a->agent ? "Python 3 (sandpit, agent)" : "Python 3 (sandpit)";
        if (a->gateway &&
            snprintf(a->gw_display, sizeof a->gw_display, "%.*s, %s)",
                     (int)strlen(a->display) - 1, a->display, a->gateway) > 0)
            a->display = a->gw_display;
    }
    if (!install_valid_name(a->name)) {
        fprintf(stderr,
                "sandpit install: a kernel name uses only letters, digits, -, _ "
                "and . (\"%s\")\n",
                a->name);
        return -EINVAL;
    }
    return 0;
}

/* Reads and checks the command line into a and a->o. 0, FLAGS_HELP, or -EINVAL
 * (said on stderr). */
static int parse_args(struct install_args *a, int argc, char **argv)
{
    char err[PATH_MAX + 256];
    const struct flags fl = FLAGS_OF("sandpit install", install_flags, true);
    int rc = flags_parse(&fl, a, &argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP)
        return rc;
    if (rc)
        goto bad;
    if (a->user && a->prefix) {
        fprintf(stderr, "sandpit install: --user and --prefix cannot be used together\n");
        return -EINVAL;
    }
    if (strcmp(a->interrupt_mode, "message") != 0 &&
        strcmp(a->interrupt_mode, "signal") != 0) {
        fprintf(stderr, "sandpit install: --interrupt-mode takes message or signal\n");
        return -EINVAL;
    }
    if ((rc = options_parse(a->o, argc, argv, err, sizeof err)) ||
        (rc = options_check(a->o, err, sizeof err)) ||
        (rc = options_resolve_paths(a->o, err, sizeof err)))
        goto bad;
    if (absolute_workspace(a->o)) {
        fprintf(stderr, "sandpit install: --workspace %s cannot be made absolute\n",
                a->o->workspace);
        return -EINVAL;
    }
    if ((a->gateway && !launcher_spec_known(a->gateway)) || (a->image && !a->gateway)) {
        fprintf(stderr, "sandpit install: --enterprise-gateway takes distributed or "
                        "kubernetes (--image goes with kubernetes)\n");
        return -EINVAL;
    }
    return default_names(a);
bad:
    fprintf(stderr, "sandpit install: %s\n", err);
    return -EINVAL;
}

/* The kernelspec (new), its argv starting self; NULL when out of memory. */
static json_t *kernelspec(const struct install_args *a, const char *self)
{
    char **kargv = NULL;
    const char *head[] = {self, "kernel", "-f", "{connection_file}"};
    json_t *jargv = json_array();
    for (size_t i = 0; i < 4; i++)
        json_array_append_new(jargv, json_string(head[i]));
    int kargc = options_to_argv(a->o, &kargv, 0);
    for (int i = 0; i < kargc; i++) {
        json_array_append_new(jargv, json_string(kargv[i]));
        free(kargv[i]);
    }
    free(kargv);
    return json_pack("{s:o, s:s, s:s, s:s, s:{s:b}}", "argv", jargv, "display_name",
                     a->display, "language", "python", "interrupt_mode",
                     a->interrupt_mode, "metadata", "debugger", 0);
}

/* Writes name in dir, whole or not at all. 0, or -errno (said on stderr). */
static int write_in(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_MAX];
    int rc = snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path
                 ? -ENAMETOOLONG
                 : fsutil_write_file(path, data, len, 0644);
    if (rc)
        fprintf(stderr, "sandpit install: cannot write %s/%s: %s\n", dir, name,
                tfile_strerror(rc));
    return rc;
}

/* Writes spec's kernel.json and the logos into dir. 0, or -errno (said on stderr). */
static int write_spec(const char *dir, const json_t *spec)
{
    static const char *const logos[][2] = {
        {"kernelspec/logo-32x32.png", "logo-32x32.png"},
        {"kernelspec/logo-64x64.png", "logo-64x64.png"},
        {"kernelspec/logo-svg.svg", "logo-svg.svg"},
    };
    char *text = json_dumps(spec, JSON_INDENT(2));
    int rc = text ? fsutil_mkdir_p(dir, 0755) : -ENOMEM;
    if (rc)
        fprintf(stderr, "sandpit install: cannot write %s/kernel.json: %s\n", dir,
                strerror(-rc));
    else
        rc = write_in(dir, "kernel.json", text, strlen(text));
    free(text);
    for (size_t i = 0; i < 3 && !rc; i++) {
        const struct embedded_file *f = embedded_logos_find(logos[i][0]);
        if (f)
            rc = write_in(dir, logos[i][1], f->data, f->len);
    }
    return rc;
}

/* Installs the kernelspec the command line a describes. 0 or 1 (said on stderr). */
static int install(const struct install_args *a)
{
    char err[PATH_MAX + 256], self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("sandpit install: cannot find this binary");
        return 1;
    }
    self[n] = 0;
    /* A kernelspec that runs here must find its worker (a gateway's kernels run
     * on other hosts or in an image, with theirs). */
    char worker[PATH_MAX];
    if (!a->gateway && respawn_worker_program(worker, sizeof worker, err, sizeof err)) {
        fprintf(stderr, "sandpit install: no kernel could start: %s\n", err);
        return 1;
    }
    char dir[PATH_MAX], base[PATH_MAX];
    int rc = install_data_dir(a->user, a->prefix, base, sizeof base);
    if (rc ||
        snprintf(dir, sizeof dir, "%s/kernels/%s", base, a->name) >= (int)sizeof dir) {
        fprintf(stderr, "sandpit install: cannot work out where to install (%s)\n",
                strerror(rc ? -rc : ENAMETOOLONG));
        return 1;
    }
    json_t *spec = kernelspec(a, self);
    if (!spec)
        fprintf(stderr, "sandpit install: out of memory\n");
    else if (a->gateway &&
             (rc = launcher_spec_apply(spec, a->gateway, a->image, dir, err, sizeof err)))
        fprintf(stderr, "sandpit install: %s\n", err);
    else
        rc = write_spec(dir, spec);
    json_decref(spec);
    if (!spec || rc)
        return 1;
    printf("Installed kernelspec %s in %s%s\n", a->name, dir,
           a->user || a->prefix ? ""
                                : " (system-wide: for every user; --user installs it "
                                  "for you alone)");
    return 0;
}

int install_main(int argc, char **argv)
{
    struct options o;
    struct install_args a = {.interrupt_mode = "message", .o = &o};
    options_init(&o);
    int rc = parse_args(&a, argc, argv), status;
    if (rc == FLAGS_HELP)
        usage(stdout);
    /* 2 for a wrong command line; once it was right, what fails is a failure */
    status = rc == FLAGS_HELP ? 0 : rc ? 2 : install(&a);
    options_release(&o);
    return status;
}
