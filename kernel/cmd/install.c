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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/embedded.h"
#include "kernel/util/fsutil.h"
#include "kernel/cmd/launcher_spec.h"
#include "kernel/options.h"
#include "kernel/supervisor/worker_lifecycle.h"

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

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    size_t w = fwrite(data, 1, len, f);
    int rc = fclose(f);
    if (w != len || rc != 0)
        return -EIO;
    return 0;
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

/* What the install option a needs after it, or NULL if a takes no value. */
static const char *install_value_name(const char *a)
{
    static const char *const takes[][2] = {
        {"--prefix", "a folder"},
        {"--name", "a name"},
        {"--display-name", "a text"},
        {"--interrupt-mode", "message or signal"},
        {"--profile", "default or agent"},
        {"--enterprise-gateway", "distributed or kubernetes"},
        {"--image", "an image name"},
    };
    for (size_t i = 0; i < sizeof takes / sizeof takes[0]; i++)
        if (strcmp(a, takes[i][0]) == 0)
            return takes[i][1];
    return NULL;
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

int install_main(int argc, char **argv)
{
    bool user = false, agent = false;
    const char *prefix = NULL, *name = NULL, *display = NULL, *interrupt_mode = "message";
    const char *gateway = NULL, *image = NULL;
    char gw_name[80], gw_display[128];
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0, status = 2; /* until the command line has been read */
    struct options o;
    options_init(&o);
    if (!rest)
        return 1;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        const char *what = install_value_name(a);
        if (what && !next) {
            fprintf(stderr, "sandpit install: %s needs %s\n", a, what);
            goto out;
        }
        if (strcmp(a, "--user") == 0) {
            user = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            status = 0;
            goto out;
        } else if (strcmp(a, "--prefix") == 0) {
            prefix = argv[++i];
        } else if (strcmp(a, "--name") == 0) {
            name = argv[++i];
        } else if (strcmp(a, "--display-name") == 0) {
            display = argv[++i];
        } else if (strcmp(a, "--interrupt-mode") == 0) {
            interrupt_mode = argv[++i];
        } else if (strcmp(a, "--enterprise-gateway") == 0) {
            gateway = argv[++i];
        } else if (strcmp(a, "--image") == 0) {
            image = argv[++i];
        } else if (strcmp(a, "--profile") == 0) {
            const char *p = argv[++i];
            char perr[128];
            if (options_apply_profile(&o, p, perr, sizeof perr)) {
                fprintf(stderr, "sandpit install: %s\n", perr);
                goto out;
            }
            agent = strcmp(p, "agent") == 0;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    if (user && prefix) {
        fprintf(stderr, "sandpit install: --user and --prefix cannot be used together\n");
        goto out;
    }
    if (strcmp(interrupt_mode, "message") != 0 && strcmp(interrupt_mode, "signal") != 0) {
        fprintf(stderr, "sandpit install: --interrupt-mode takes message or signal\n");
        goto out;
    }
    char err[PATH_MAX + 256];
    if (options_parse(&o, nrest, rest, err, sizeof err) ||
        options_check(&o, err, sizeof err) ||
        options_resolve_paths(&o, err, sizeof err)) {
        fprintf(stderr, "sandpit install: %s\n", err);
        goto out;
    }
    if (absolute_workspace(&o)) {
        fprintf(stderr, "sandpit install: --workspace %s cannot be made absolute\n",
                o.workspace);
        goto out;
    }
    if ((gateway && !launcher_spec_known(gateway)) || (image && !gateway)) {
        fprintf(stderr, "sandpit install: --enterprise-gateway takes distributed or "
                        "kubernetes (--image goes with kubernetes)\n");
        goto out;
    }
    if (!name) {
        name = agent ? "sandpit-agent" : "sandpit";
        if (gateway && snprintf(gw_name, sizeof gw_name, "%s-%s", name, gateway) > 0)
            name = gw_name;
    }
    if (!display) {
        display = agent ? "Python 3 (sandpit, agent)" : "Python 3 (sandpit)";
        if (gateway && snprintf(gw_display, sizeof gw_display, "%.*s, %s)",
                                (int)strlen(display) - 1, display, gateway) > 0)
            display = gw_display;
    }
    if (!install_valid_name(name)) {
        fprintf(stderr,
                "sandpit install: a kernel name uses only letters, digits, -, _ "
                "and . (\"%s\")\n",
                name);
        goto out;
    }
    status = 1; /* the command line was right: what fails now is a failure */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("sandpit install: cannot find this binary");
        goto out;
    }
    self[n] = 0;
    /* A kernelspec that runs here must find its worker (a gateway's kernels run
     * on other hosts or in an image, with theirs). */
    char worker[PATH_MAX];
    if (!gateway && respawn_worker_program(worker, sizeof worker, err, sizeof err)) {
        fprintf(stderr, "sandpit install: no kernel could start: %s\n", err);
        goto out;
    }

    char dir[PATH_MAX], base[PATH_MAX];
    int rc = install_data_dir(user, prefix, base, sizeof base);
    if (rc || snprintf(dir, sizeof dir, "%s/kernels/%s", base, name) >= (int)sizeof dir) {
        fprintf(stderr, "sandpit install: cannot work out where to install (%s)\n",
                strerror(rc ? -rc : ENAMETOOLONG));
        goto out;
    }
    char **kargv = NULL;
    int kargc = 0;
    const char *head[] = {self, "kernel", "-f", "{connection_file}"};
    json_t *jargv = json_array();
    for (size_t i = 0; i < 4; i++)
        json_array_append_new(jargv, json_string(head[i]));
    kargc = options_to_argv(&o, &kargv, 0);
    for (int i = 0; i < kargc; i++) {
        json_array_append_new(jargv, json_string(kargv[i]));
        free(kargv[i]);
    }
    free(kargv);
    json_t *spec = json_pack("{s:o, s:s, s:s, s:s, s:{s:b}}", "argv", jargv,
                             "display_name", display, "language", "python",
                             "interrupt_mode", interrupt_mode, "metadata", "debugger", 0);
    if (spec && gateway &&
        (rc = launcher_spec_apply(spec, gateway, image, dir, err, sizeof err))) {
        fprintf(stderr, "sandpit install: %s\n", err);
        json_decref(spec);
        goto out;
    }
    char *text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
    json_decref(spec);
    if (!text || (rc = fsutil_mkdir_p(dir, 0755)) != 0 ||
        (rc = write_file(dir, "kernel.json", text, strlen(text))) != 0) {
        fprintf(stderr, "sandpit install: cannot write %s/kernel.json: %s\n", dir,
                strerror(rc ? -rc : ENOMEM));
        free(text);
        goto out;
    }
    free(text);
    static const char *const logos[][2] = {
        {"kernelspec/logo-32x32.png", "logo-32x32.png"},
        {"kernelspec/logo-64x64.png", "logo-64x64.png"},
        {"kernelspec/logo-svg.svg", "logo-svg.svg"},
    };
    for (size_t i = 0; i < 3; i++) {
        const struct embedded_file *f = embedded_logos_find(logos[i][0]);
        if (f && (rc = write_file(dir, logos[i][1], f->data, f->len)) != 0) {
            fprintf(stderr, "sandpit install: cannot write %s/%s: %s\n", dir, logos[i][1],
                    strerror(-rc));
            goto out;
        }
    }
    printf("Installed kernelspec %s in %s%s\n", name, dir,
           user || prefix ? ""
                          : " (system-wide: for every user; --user installs it for you "
                            "alone)");
    status = 0;
out:
    options_release(&o);
    free(rest);
    return status;
}
