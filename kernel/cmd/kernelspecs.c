/* kernelspecs: the installed kernelspecs of sandpit, listed and removed.
 *
 * Jupyter looks for kernels/NAME/kernel.json in each folder of its path, as
 * jupyter_core builds it: JUPYTER_PATH's folders, the user's Jupyter data
 * folder, then the system's (/usr/local/share/jupyter, /usr/share/jupyter);
 * the first NAME found wins. A kernelspec is sandpit's when its argv runs a
 * binary called sandpit (or this very one) with "kernel": only those are
 * listed, and only those are removed, so that uninstall never deletes another
 * kernel's folder. */
#include "kernel/cmd/kernelspecs.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/flags.h"
#include "kernel/util/fsutil.h"
#include "kernel/cmd/install.h"

#define SEARCH_MAX 64 /* folders of Jupyter's path looked in */

/* The kernelspec in dir (new, caller releases) if it is sandpit's, else NULL. */
static json_t *sandpit_spec(const char *dir)
{
    char path[PATH_MAX], self[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/kernel.json", dir) >= (int)sizeof path)
        return NULL;
    json_t *spec = json_load_file(path, 0, NULL);
    json_t *argv = json_object_get(spec, "argv");
    const char *bin = json_string_value(json_array_get(argv, 0));
    const char *cmd = json_string_value(json_array_get(argv, 1));
    const char *base = bin ? strrchr(bin, '/') : NULL;
    base = base ? base + 1 : bin;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    if (bin && cmd && strcmp(cmd, "kernel") == 0 &&
        (strcmp(base, "sandpit") == 0 || strcmp(bin, self) == 0))
        return spec;
    json_decref(spec);
    return NULL;
}

/* Jupyter's data folders in the order it looks in them (new strings in v,
 * at most max); returns how many. */
static size_t search_path(char **v, size_t max)
{
    size_t n = 0;
    char dir[PATH_MAX];
    const char *jp = getenv("JUPYTER_PATH");
    for (const char *s = jp; s && *s && n < max;) {
        size_t len = strcspn(s, ":");
        if (len && len < sizeof dir) {
            memcpy(dir, s, len);
            dir[len] = 0;
            while (len > 1 && dir[len - 1] == '/')
                dir[--len] = 0;
            v[n] = strdup(dir);
            n += v[n] != NULL;
        }
        s += len + (s[len] == ':');
    }
    const char *fixed[] = {NULL, INSTALL_SYSTEM_DIR, "/usr/share/jupyter"};
    if (fsutil_jupyter_data_dir(dir, sizeof dir) == 0)
        fixed[0] = dir;
    for (size_t i = 0; i < 3 && n < max; i++) {
        bool seen = !fixed[i];
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(v[k], fixed[i]) == 0;
        if (!seen && (v[n] = strdup(fixed[i])))
            n++;
    }
    return n;
}

/* A word of argv as a shell would need it. */
static void print_word(const char *w)
{
    if (*w && strcspn(w, " \t\n'\"\\$`*?[]{}()<>|&;#~") == strlen(w)) {
        printf(" %s", w);
        return;
    }
    printf(" '");
    for (const char *p = w; *p; p++)
        printf(*p == '\'' ? "'\\''" : "%c", *p);
    printf("'");
}

static void print_spec(const char *name, const char *dir, const json_t *spec, bool hidden)
{
    json_t *argv = json_object_get(spec, "argv");
    const char *display = json_string_value(json_object_get(spec, "display_name"));
    const char *mode = json_string_value(json_object_get(spec, "interrupt_mode"));
    printf("%s: %s%s\n", name, display ? display : "(no display name)",
           hidden ? " (hidden by the one of the same name above: Jupyter uses that one)"
                  : "");
    printf("  folder:         %s\n", dir);
    printf("  binary:         %s\n", json_string_value(json_array_get(argv, 0)));
    printf("  interrupt mode: %s\n", mode ? mode : "signal");
    printf("  options:       ");
    /* argv is BINARY kernel -f {connection_file} [options] */
    size_t i, shown = 0;
    json_t *a;
    json_array_foreach(argv, i, a) {
        if (i >= 4 && json_is_string(a)) {
            print_word(json_string_value(a));
            shown++;
        }
    }
    printf("%s\n", shown ? "" : " none (the defaults)");
}

int kernelspecs_list_main(int argc, char **argv)
{
    static const struct flag list_flags[] = {
        {.name = "help", .letter = 'h', .kind = FLAG_HELP}};
    const struct flags fl = FLAGS_OF("sandpit list", list_flags, false);
    char err[256];
    int rc = flags_parse(&fl, NULL, &argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP) {
        printf("usage: sandpit list\n\nShows the sandpit kernelspecs that Jupyter "
               "finds, in the order it looks for them, with their options.\n");
        return 0;
    }
    if (rc) {
        fprintf(stderr, "sandpit list: %s\n", err);
        return 2;
    }
    char *dirs[SEARCH_MAX] = {0}, *names[256];
    size_t ndirs = search_path(dirs, SEARCH_MAX), nnames = 0, found = 0;
    for (size_t d = 0; d < ndirs; d++) {
        char kdir[PATH_MAX], sdir[PATH_MAX];
        snprintf(kdir, sizeof kdir, "%s/kernels", dirs[d]);
        struct dirent **entries = NULL;
        int n = scandir(kdir, &entries, NULL, alphasort);
        for (int e = 0; e < n; e++) {
            const char *name = entries[e]->d_name;
            json_t *spec = NULL;
            if (name[0] != '.' &&
                snprintf(sdir, sizeof sdir, "%s/%s", kdir, name) < (int)sizeof sdir)
                spec = sandpit_spec(sdir);
            if (spec) {
                bool hidden = false;
                for (size_t k = 0; k < nnames && !hidden; k++)
                    hidden = strcmp(names[k], name) == 0;
                if (!hidden && nnames < sizeof names / sizeof *names &&
                    (names[nnames] = strdup(name)))
                    nnames++;
                print_spec(name, sdir, spec, hidden);
                found++;
            }
            json_decref(spec);
            free(entries[e]);
        }
        free(entries);
    }
    if (!found)
        printf("No sandpit kernelspec is installed where Jupyter looks; `sandpit install "
               "--user` installs one.\n");
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    return 0;
}

struct uninstall_args {
    bool user;
    const char *prefix, *name;
};

#define OFF(f) offsetof(struct uninstall_args, f)

static const struct flag uninstall_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    {.name = "user", .kind = FLAG_SWITCH, .offset = OFF(user)},
    {.name = "prefix", .kind = FLAG_TEXT, .needs = "a folder", .offset = OFF(prefix)},
    {.name = "name", .kind = FLAG_TEXT, .needs = "a name", .offset = OFF(name)},
};

int kernelspecs_uninstall_main(int argc, char **argv)
{
    struct uninstall_args a = {.name = "sandpit"};
    const struct flags fl = FLAGS_OF("sandpit uninstall", uninstall_flags, false);
    char err[256];
    int rc = flags_parse(&fl, &a, &argc, argv, err, sizeof err);
    if (rc == FLAGS_HELP) {
        printf("usage: sandpit uninstall [--user | --prefix DIR] [--name NAME]\n\n"
               "Removes the sandpit kernelspec NAME (default sandpit) from where "
               "`sandpit install`\nwith the same options puts it: system-wide, the "
               "Jupyter data folder (--user),\nor DIR/share/jupyter (--prefix).\n");
        return 0;
    }
    if (rc) {
        fprintf(stderr, "sandpit uninstall: %s\n", err);
        return 2;
    }
    bool user = a.user;
    const char *prefix = a.prefix, *name = a.name;
    if (user && prefix) {
        fprintf(stderr,
                "sandpit uninstall: --user and --prefix cannot be used together\n");
        return 2;
    }
    if (!install_valid_name(name)) {
        fprintf(stderr, "sandpit uninstall: \"%s\" is not a kernel name\n", name);
        return 2;
    }
    char base[PATH_MAX], dir[PATH_MAX];
    rc = install_data_dir(user, prefix, base, sizeof base);
    if (rc || snprintf(dir, sizeof dir, "%s/kernels/%s", base, name) >= (int)sizeof dir) {
        fprintf(stderr, "sandpit uninstall: cannot work out where to look (%s)\n",
                strerror(rc ? -rc : ENAMETOOLONG));
        return 1;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "sandpit uninstall: there is no kernelspec %s in %s/kernels\n",
                name, base);
        return 1;
    }
    json_t *spec = sandpit_spec(dir);
    if (!spec) {
        fprintf(stderr,
                "sandpit uninstall: %s is not a sandpit kernelspec: it was left as it "
                "is\n",
                dir);
        return 1;
    }
    json_decref(spec);
    fsutil_remove_tree(dir);
    if (stat(dir, &st) == 0) {
        /* what is left says why (the tree's removal ignores errors) */
        rc = rmdir(dir) == 0 ? 0 : errno;
        fprintf(stderr, "sandpit uninstall: cannot remove %s: %s\n", dir, strerror(rc));
        return 1;
    }
    printf("Removed kernelspec %s from %s\n", name, dir);
    return 0;
}
