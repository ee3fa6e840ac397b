/* worker_policy: the worker's sandbox policy (worker_policy.h).
 *
 * What is hard here: every path is resolved now, by the worker before it is
 * confined, and a path a cell could change (a link in the workspace on the way
 * to a PYTHONPATH entry, a replaced connection file) makes it refuse to start
 * rather than confine itself to the wrong place (sandbox/POLICY.md). */
#include "kernel/worker/worker_policy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "kernel/util/log.h"
#include "sandbox/tfile.h"

/* The folders the interpreter reads: its prefix and where packages live. */
static const char *const python_ro_paths[] = {
    "/usr", "/lib", "/lib64", "/etc/python" SANDPIT_PY_SHORT, NULL,
};

#define PTH_PATHS_MAX                                                                    \
    64 /* folders named by a venv's .pth files that are made readable                    \
        */

static void free_paths(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The folders that the .pth files of a site-packages folder put on sys.path
 * (an editable install's source, for one): the lines that are paths, not
 * "import" lines, as site.addsitedir reads them. Added to v from v[*n] on, up
 * to v[max - 1]; false when out of memory. */
static bool pth_paths(const char *site, char **v, size_t *n, size_t max)
{
    /* A venv in the workspace is the code's to write: a .pth there may be a FIFO
     * or a link, which tfile neither opens for long nor follows. */
    int dfd = site ? tfile_open_root(site) : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0)
        close(dfd);
    struct dirent *e;
    bool ok = true;
    while (d && ok && *n < max && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        char path[PATH_MAX], line[PATH_MAX], real[PATH_MAX];
        FILE *f = NULL;
        int fd = len > 4 && strcmp(e->d_name + len - 4, ".pth") == 0
                     ? tfile_open(dirfd(d), e->d_name, O_RDONLY)
                     : -1;
        if (fd >= 0 && !(f = fdopen(fd, "r")))
            close(fd);
        while (f && ok && *n < max && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (!line[0] || line[0] == '#' || strncmp(line, "import", 6) == 0)
                continue;
            if (line[0] != '/' &&
                snprintf(path, sizeof path, "%s/%s", site, line) < (int)sizeof path)
                snprintf(line, sizeof line, "%s", path);
            if (realpath(line, real))
                ok = (v[(*n)++] = strdup(real)) != NULL;
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return ok;
}

/* Each PYTHONPATH entry (relative ones are the workspace's) by its real path, into
 * v[*n] on (up to v[max - 1]). One missing where a cell could make it is made empty
 * first (sandbox_resolve), so that the mount namespace binds it read-only before any
 * cell: else a cell could write lib/helpers.py, which the next worker's --preload
 * imports before seccomp. 0, -ENOMEM, or -ELOOP with why set. */
static int pythonpath_paths(const char *pp, const struct sandbox_policy *p, char **v,
                            size_t *n, size_t max, char *why, size_t len)
{
    for (const char *s = pp; s && *s && *n < max;) {
        size_t k = strcspn(s, ":");
        char entry[PATH_MAX], real[PATH_MAX];
        bool made = false;
        int rc = -ENOENT;
        if (k && k < sizeof entry - strlen(p->workspace) - 1) {
            if (s[0] == '/')
                snprintf(entry, sizeof entry, "%.*s", (int)k, s);
            else
                snprintf(entry, sizeof entry, "%s/%.*s", p->workspace, (int)k, s);
            rc = sandbox_resolve(p, NULL, entry,
                                 p->enabled ? SANDBOX_KIND_DIR : SANDBOX_KIND_ANY, real,
                                 sizeof real, &made);
            if (rc < 0 && rc != -ENOENT && (rc != -ELOOP || !p->enabled))
                rc = realpath(entry, real) ? 0 : -errno;
        }
        if (rc == -ELOOP) {
            snprintf(why, len,
                     "the PYTHONPATH entry %.200s is reached through a symbolic link in "
                     "the workspace, which the code could point elsewhere: name the real "
                     "folder instead",
                     entry);
            return rc;
        }
        if (made)
            log_info("made %s (empty), so that the code cannot make it", real);
        if (rc == 0 && !(v[(*n)++] = strdup(real)))
            return -ENOMEM;
        s += k + (s[k] == ':');
    }
    return 0;
}

/* The history's folders, appended to hidden from k: the folder of history
 * (the supervisor made it absolute, gives where the folder is now, and keeps
 * the history in memory where the folder would hold the workspace), and the
 * user's default one, which other kernels use even when this one has
 * --history off or its own (unless it holds a read-write path). The paths are
 * static: the worker confines itself once. Returns the new count. */
static size_t hide_history(const char **hidden, size_t k, const char *history,
                           const struct sandbox_policy *p)
{
    static char dir[PATH_MAX], data[PATH_MAX], dflt[PATH_MAX + 8], real[PATH_MAX];
    const char *slash = history ? strrchr(history, '/') : NULL;
    if (slash && slash != history && slash - history < (long)sizeof dir) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - history), history);
        hidden[k++] = dir;
    }
    if (fsutil_jupyter_data_dir(data, sizeof data) == 0 &&
        snprintf(dflt, sizeof dflt, "%s/sandpit", data) < (int)sizeof dflt &&
        realpath(dflt, real) && strcmp(real, dir) != 0 &&
        !(p->workspace && sandbox_path_beneath(p->workspace, real)) &&
        !(p->tmpdir && sandbox_path_beneath(p->tmpdir, real)))
        hidden[k++] = real;
    return k;
}

/* What the code may read but not write: the interpreter's folders, the
 * virtual environment of --venv with what its .pth files name, the folders
 * of --read, and each entry of PYTHONPATH (see pythonpath_paths). A new
 * NULL-terminated array of new strings (free with free_paths), or NULL with
 * why set. */
static char **read_only_paths(const struct options *o, const struct sandbox_policy *p,
                              char *why, size_t len)
{
    const char *pp = getenv("PYTHONPATH");
    size_t max = sizeof python_ro_paths / sizeof *python_ro_paths + 1 + PTH_PATHS_MAX +
                 o->read_dirs.n + (pp ? strlen(pp) / 2 + 1 : 0);
    char **v = calloc(max + 1, sizeof *v);
    size_t n = 0;
    bool ok = v != NULL;
    snprintf(why, len, "out of memory building the sandbox policy");
    for (size_t i = 0; ok && python_ro_paths[i]; i++)
        ok = (v[n++] = strdup(python_ro_paths[i])) != NULL;
    if (ok && o->venv) {
        char *site = options_venv_site_packages(o);
        ok = (v[n++] = strdup(o->venv)) != NULL &&
             pth_paths(site, v, &n, n + PTH_PATHS_MAX);
        free(site);
    }
    for (size_t i = 0; ok && i < o->read_dirs.n; i++)
        ok = (v[n++] = strdup(o->read_dirs.v[i])) != NULL;
    if (ok)
        ok = pythonpath_paths(pp, p, v, &n, max, why, len) == 0;
    if (!ok) {
        free_paths(v);
        return NULL;
    }
    return v;
}

/* The connection file (--hide) must be the one the supervisor found at its start
 * (--hide-id, its device and inode): a path names a place, and the file at a place
 * can change. Every worker pins the folders above it (masks.c), so no cell of this
 * kernel can move it; if something else did, its key may lie open where the cover
 * does not go, and the worker refuses to start. */
static bool connection_file_in_place(const struct options *o)
{
    struct stat st;
    unsigned long long dev, ino;
    if (!o->hide || !o->hide_id || sscanf(o->hide_id, "%llu:%llu", &dev, &ino) != 2)
        return true;
    if (stat(o->hide, &st) < 0)
        return errno == ENOENT; /* removed (sandpit run removes its own): no key there */
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* What is covered: the connection file, the history's folders, the masks'
 * secrets and the other places a kernel of this user keeps its private folders.
 * 0, or -1 when out of memory (logged). */
static int hidden_paths(struct worker_policy *wp, const struct options *o)
{
    struct sandbox_policy *policy = &wp->policy;
    struct sandbox_masks *masks = &wp->masks;
    size_t n_hidden = 0;
    while (masks->hidden && masks->hidden[n_hidden])
        n_hidden++;
    /* Beside the masks': the connection file, two of the history's, two other
     * private roots, and the list's end. */
    const char **hidden = wp->hidden = calloc(n_hidden + 6, sizeof *hidden);
    if (!hidden) {
        log_error("out of memory building the sandbox policy");
        return -1;
    }
    size_t k = 0;
    if (o->hide)
        hidden[k++] = o->hide;
    k = hide_history(hidden, k, o->history, policy);
    for (size_t i = 0; i < n_hidden; i++)
        hidden[k++] = masks->hidden[i];
    /* The other places a kernel of this user keeps its private folders (one
     * started with another TMPDIR), which the supervisor makes before any
     * worker starts, so that no cell can make one first: covered too. */
    char(*other_roots)[PATH_MAX] = wp->other_roots;
    int n_other = 0;
    if (sandbox_private_root("/tmp", other_roots[n_other], PATH_MAX) == 0)
        n_other++;
    if (sandbox_private_root(getenv("XDG_RUNTIME_DIR"), other_roots[n_other], PATH_MAX) ==
        0)
        n_other++;
    for (int i = 0; i < n_other; i++)
        if (!policy->private_root || strcmp(other_roots[i], policy->private_root) != 0)
            hidden[k++] = other_roots[i];
    policy->hidden_paths = hidden;
    return 0;
}

int worker_policy_build(struct worker_policy *wp, const struct options *o,
                        const char *cgroup_note, struct sandbox_trial *trial)
{
    struct sandbox_policy *policy = &wp->policy;
    sandbox_policy_init(policy);
    policy->enabled = o->sandbox;
    policy->network = o->network;
    policy->workspace = o->workspace;
    policy->tmpdir = o->tmpdir;
    /* The user's folder of private folders, which the supervisor made the
     * temporary folder in (tmpdir.h): hidden but for that folder. */
    char *private_root = wp->private_root, parent[PATH_MAX], expected[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", o->tmpdir);
    snprintf(private_root, sizeof wp->private_root, "%s", dirname(parent));
    snprintf(parent, sizeof parent, "%s", private_root);
    if (sandbox_private_root(dirname(parent), expected, sizeof expected) == 0 &&
        strcmp(expected, private_root) == 0)
        policy->private_root = private_root;
    char why[512];
    char **ro_paths = wp->ro_paths = read_only_paths(o, policy, why, sizeof why);
    if (!ro_paths) {
        log_error("cannot confine the worker: %s", why);
        return -1;
    }
    if (o->sandbox && !connection_file_in_place(o)) {
        log_error("cannot confine the worker: the connection file %s is no longer the "
                  "one the kernel started with, and its key may lie elsewhere in the "
                  "workspace",
                  o->hide);
        return -1;
    }
    policy->ro_paths = (const char *const *)ro_paths;
    /* The connection file holds the key: unreadable even inside the workspace; so
     * are the user's secrets, and the user's setup is never written (home.h). */
    extern char **environ;
    struct sandbox_masks *masks = &wp->masks;
    int rc = sandbox_masks_build(masks, policy, environ, o->sandbox);
    if (rc != 0) {
        log_error("cannot confine the worker: %s",
                  masks->why[0] ? masks->why
                                : "out of memory building the sandbox policy");
        return -1;
    }
    if (masks->scan_cut)
        log_warn("the workspace has too many entries near its top: connection files of "
                 "other kernels beyond the first 65536 are not looked for");
    for (size_t i = 0; masks->made && masks->made[i]; i++)
        log_info("made %s (empty), so that the code cannot make it", masks->made[i]);
    if (hidden_paths(wp, o) < 0)
        return -1;
    policy->readonly_paths = (const char *const *)masks->readonly;
    policy->home_dirs = (const char *const *)masks->homes;
    for (size_t i = 0; masks->skipped && masks->skipped[i]; i++)
        log_warn("%s holds the workspace: it is not masked", masks->skipped[i]);
    policy->memory_bytes = (uint64_t)o->memory_mib << 20;
    policy->max_file_bytes = (uint64_t)o->max_file_mib << 20;
    policy->cpus = o->cpus;
    policy->cgroup_note = cgroup_note;
    policy->trial = trial;
    return 0;
}

void worker_policy_release(struct worker_policy *wp)
{
    free(wp->hidden);
    free_paths(wp->ro_paths);
    sandbox_masks_release(&wp->masks);
}
