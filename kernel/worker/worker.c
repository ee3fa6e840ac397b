/* worker: the process that runs cells.
 *
 * The order of start-up is the point of this file (see sandbox/POLICY.md).
 * CPython starts first, with its own signal handlers, and imports the
 * embedded runtime, reading nothing but the interpreter's own folders (no
 * PYTHONPATH, no workspace, no user site): that much is the same for every
 * worker of a kernel, so a worker template does it once and forks each worker
 * from there (template_fork.c); started alone, a worker does it itself. Then, in
 * the worker, with a single thread: resource limits, namespaces and Landlock;
 * then what may import the user's modules (PYTHONPATH, --venv, the preloads);
 * then no-new-privileges and the seccomp filter on every thread. Only then
 * does the worker say hello, so no request ever runs before the sandbox is
 * locked. */
#include "kernel/worker/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "kernel/link/frames.h"
#include "kernel/link/template_msg.h"
#include "kernel/link/worker_exit.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/options.h"
#include "kernel/mem/loadpages.h"
#include "kernel/mem/prefault.h"
#include "kernel/worker/arenas.h"
#include "kernel/worker/pump.h"
#include "kernel/worker/pyrt.h"
#include "kernel/worker/template_fork.h"
#include "kernel/worker/uplink.h"
#include "sandbox/home.h"
#include "sandbox/sandbox.h"
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

static void set_environment(const struct options *o)
{
    char path[4096];
    setenv("TMPDIR", o->tmpdir, 1);
    /* What sandpit/guard.py explains when it refuses something. */
    setenv("SANDPIT_SANDBOX", o->sandbox ? "on" : "off", 1);
    setenv("SANDPIT_NETWORK", o->network ? "on" : "off", 1);
    setenv("SANDPIT_WORKSPACE", o->workspace, 1);
    char limit[32];
    snprintf(limit, sizeof limit, "%lu", o->memory_mib);
    setenv("SANDPIT_MEMORY_MIB", limit, 1);
    snprintf(limit, sizeof limit, "%lu", o->max_file_mib);
    setenv("SANDPIT_MAX_FILE_MIB", limit, 1);
    /* Options for the inline charts, read by sandpit/figures.py. */
    if (o->figure_format)
        setenv("SANDPIT_FIGURE_FORMAT", o->figure_format, 1);
    if (o->dpi) {
        char dpi[16];
        snprintf(dpi, sizeof dpi, "%d", o->dpi);
        setenv("SANDPIT_DPI", dpi, 1);
    }
    /* --seed, read by sandpit/seeding.py in each new worker. */
    if (o->seed)
        setenv("SANDPIT_SEED", o->seed, 1);
    /* Tools that cache under the home folder (jedi, fontconfig) cache here. */
    setenv("XDG_CACHE_HOME", o->tmpdir, 1);
    /* matplotlib writes its font cache here; the inline backend is ours. */
    snprintf(path, sizeof path, "%s/matplotlib", o->tmpdir);
    int tmp = tfile_open_root(o->tmpdir); /* an earlier cell may have left a link */
    int mpl = tmp < 0 ? tmp : tfile_mkdir(tmp, "matplotlib", 0700);
    if (mpl >= 0)
        close(mpl);
    if (tmp >= 0)
        close(tmp);
    setenv("MPLCONFIGDIR", path, 1);
    setenv("MPLBACKEND", "module://sandpit.mpl_backend", 1);
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    /* Code in a notebook expects a terminal-less, colourful-enough world. */
    setenv("TERM", "xterm-256color", 0);
    setenv("CLICOLOR", "1", 0);
    setenv("PAGER", "cat", 1);
    setenv("JPY_PARENT_PID", "1", 0);
}

/* Start-up, step by step, in the log at debug level: where the time to the
 * first cell goes (`--log-level debug`). */
struct stopwatch {
    double start, last;
    long faults; /* page faults so far (minor ones: a forked worker's copies) */
};

static long page_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt + u.ru_majflt : 0;
}

static void stopwatch_step(struct stopwatch *w, const char *step)
{
    double now = monotime_now();
    long faults = page_faults();
    log_debug("start-up: %s in %.1f ms, %ld page faults (%.1f ms since main)", step,
              (now - w->last) * 1e3, faults - w->faults, (now - w->start) * 1e3);
    w->last = now;
    w->faults = faults;
}

/* PYTHONPATH without the entries that lie in a read-write path (new string). */
static char *pythonpath_outside(const char *pp, const struct sandbox_policy *p)
{
    size_t size = strlen(pp) + 1, len = 0;
    char *out = calloc(size, 1);
    for (const char *s = pp; out && *s;) {
        size_t k = strcspn(s, ":");
        char entry[PATH_MAX], real[PATH_MAX];
        bool inside = false;
        if (k && k < sizeof entry - strlen(p->workspace) - 1) {
            if (s[0] == '/')
                snprintf(entry, sizeof entry, "%.*s", (int)k, s);
            else
                snprintf(entry, sizeof entry, "%s/%.*s", p->workspace, (int)k, s);
            inside = realpath(entry, real) && sandbox_path_writable(p, NULL, real);
        }
        if (k && !inside)
            len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? ":" : "",
                                    (int)k, s);
        s += k + (s[k] == ':');
    }
    return out;
}

/* What of the user's code a worker imports: PYTHONPATH, --venv's site-packages with
 * its .pth files, --preload. Before seccomp (locked false), only what lies outside the
 * read-write paths, so that pandas and matplotlib may still run their programs at
 * import; after it, what lies inside, so that nothing in the workspace runs unfiltered
 * (it is read-only, but a cell of another kernel with the same workspace, or of an
 * earlier session, may have written it). Returns whether anything waits for after. */
static bool import_user_code(const struct options *o, const struct sandbox_policy *p,
                             const char *pythonpath, bool locked)
{
    char *site = options_venv_site_packages(o);
    bool site_inside = site && p->enabled && sandbox_path_writable(p, NULL, o->venv);
    char *outside = pythonpath && p->enabled ? pythonpath_outside(pythonpath, p) : NULL;
    bool path_inside = outside && strcmp(outside, pythonpath) != 0;
    bool later = path_inside || site_inside;
    if (!locked) {
        if (pythonpath && (outside ? outside[0] : pythonpath[0]))
            pyrt_add_path(outside ? outside : pythonpath);
        if (site && !site_inside)
            pyrt_add_site_dir(site);
        if (o->preload)
            pyrt_preload(o->preload, later);
    } else if (later) {
        if (path_inside)
            pyrt_add_path(pythonpath);
        if (site_inside)
            pyrt_add_site_dir(site);
        if (o->preload)
            pyrt_preload(o->preload, false);
    }
    free(site);
    free(outside);
    return later;
}

/* The folder the client started the kernel in, taken before the worker leaves it;
 * empty if it could not be read. */
static char start_folder[PATH_MAX];

/* The code's working folder: the client's (a notebook's folder, as in ipykernel)
 * where it lies inside the workspace, else the workspace, the worker's folder
 * until now (PYTHONPATH's relative entries and the preloads were resolved there). */
static void enter_start_folder(const char *workspace)
{
    size_t n = strlen(workspace);
    bool inside = start_folder[0] && strncmp(start_folder, workspace, n) == 0 &&
                  (start_folder[n] == 0 || start_folder[n] == '/' ||
                   (n && workspace[n - 1] == '/'));
    if (!inside || start_folder[n] == 0 || chdir(start_folder) == 0)
        return;
    log_warn("the code runs in the workspace %s: it cannot enter %s (%s)", workspace,
             start_folder, strerror(errno));
    if (chdir(workspace) != 0)
        log_warn("cannot return to the workspace: %s", strerror(errno));
}

/* The hello frame: the interpreter and the sandbox's report (new text). */
static char *hello_json(const struct sandbox_report *r)
{
    json_t *layers = json_array();
    for (size_t i = 0; layers && i < r->n; i++)
        json_array_append_new(layers,
                              json_pack("{s:s, s:s, s:s}", "name", r->layers[i].name,
                                        "state", sandbox_state_name(r->layers[i].state),
                                        "detail", r->layers[i].detail));
    json_t *hello = layers ? link_hello_build(&(struct link_hello){
                                 .python_version = pyrt_version(),
                                 .pid = (long)getpid(),
                                 .sandbox = layers,
                             })
                           : NULL;
    char *text = hello ? link_encode_text(hello) : NULL;
    json_decref(hello);
    json_decref(layers);
    return text;
}

/* Takes SPAWN_TEMPLATE_FLAG out of argv: whether this is the worker template. */
static bool take_template_flag(int *argc, char **argv)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], SPAWN_TEMPLATE_FLAG) == 0) {
            memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof *argv);
            (*argc)--;
            return true;
        }
    return false;
}

/* The worker's log once cells run: "log" frames on the link, which the
 * supervisor relays within the kernel's limit. A line logged while one is being
 * sent (the link broke under it) is dropped. */
static void to_link(enum log_level level, const char *line, size_t len)
{
    static _Thread_local bool sending;
    (void)level;
    if (sending)
        return;
    sending = true;
    char text[LINK_LOG_MAX + 1];
    if (len > LINK_LOG_MAX) /* cut at a character's start */
        for (len = LINK_LOG_MAX; len && ((unsigned char)line[len] & 0xc0) == 0x80;)
            len--;
    memcpy(text, line, len);
    text[len] = 0;
    json_t *f = link_log_build(&(struct link_log){.text = text});
    if (!f) { /* not UTF-8: its other bytes become '?' */
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)text[i] >= 0x80)
                text[i] = '?';
        f = link_log_build(&(struct link_log){.text = text});
    }
    if (f)
        uplink_send_frame(f);
    json_decref(f);
    sending = false;
}

int worker_main(int argc, char **argv)
{
    struct stopwatch watch = {.start = monotime_now()};
    watch.last = watch.start;
    struct options o;
    options_init(&o);
    char err[512];
    bool template = take_template_flag(&argc, argv);
    const char *name = template ? "template" : "worker";
    /* The log keeps the supervisor's stderr; fd 2 itself will become a pipe. */
    int logfd = fcntl(2, F_DUPFD_CLOEXEC, 10);
    log_init(name, LOG_WARN, logfd >= 0 ? logfd : 2);
    if (options_parse(&o, argc, argv, err, sizeof err) || !o.workspace || !o.tmpdir) {
        log_error("bad worker command line: %s", o.workspace ? err : "no workspace");
        return WORKER_EXIT_USAGE;
    }
    log_init(name, o.log_level, logfd >= 0 ? logfd : 2);
    /* The namespaces are tried beside CPython's start, not after it (sandbox.h). */
    struct sandbox_trial trial = {.flags = 0, .fd = -1, .done = true};
    if (o.sandbox)
        sandbox_trial_start(&trial, o.network);
    set_environment(&o);
    /* PYTHONPATH may name folders the user's code can write: Python starts
     * without it, and each worker adds it once it is confined. */
    char *pythonpath = getenv("PYTHONPATH") ? strdup(getenv("PYTHONPATH")) : NULL;
    unsetenv("PYTHONPATH");
    /* Before CPython starts: its data segment in one call (prefault.h), in
     * libpython or, where CPython is linked into it, in the program (Python's
     * own, or sandpit-worker: the Makefile). */
    if (prefault_library_data("libpython") == -ENOENT)
        prefault_library_data(NULL);
    if (!getcwd(start_folder, sizeof start_folder))
        start_folder[0] = 0;
    if (chdir("/") != 0 || pyrt_init(err, sizeof err) != 0) {
        log_error("cannot start Python: %s", err);
        return WORKER_EXIT_PYTHON;
    }
    stopwatch_step(&watch, "Python and the runtime");
    /* What the supervisor made of the worker's cgroup, for the report. */
    char cgroup_note[SANDBOX_DETAIL_MAX] = "";
    if (template) {
        sandbox_trial_finish(&trial); /* its answer goes to each worker forked */
        int rc = spawner_serve(3, logfd, cgroup_note, sizeof cgroup_note);
        if (rc != 1) {
            if (rc < 0)
                log_error("the worker template stops: %s", strerror(-rc));
            fflush(NULL);
            _exit(rc == 0 ? WORKER_EXIT_OK : WORKER_EXIT_FAILED);
        }
        /* From here on, a worker forked from the template. */
        log_init("worker", o.log_level, logfd);
        watch.start = watch.last = monotime_now();
        watch.faults = page_faults();
        stopwatch_step(&watch, "forked from the template");
    } else {
        prctl(PR_SET_NAME, "sandpit-worker"); /* rather than "exe" */
        const char *note = getenv("SANDPIT_CGROUP");
        snprintf(cgroup_note, sizeof cgroup_note, "%s", note ? note : "");
    }
    unsetenv("SANDPIT_CGROUP");
    if (pythonpath)
        setenv("PYTHONPATH", pythonpath, 1);
    uplink_init();
    uplink_set_frame_limit(link_worker_frame_limit(o.max_output, options_max_images(&o)));
    if (chdir(o.workspace) != 0) {
        log_error("cannot enter the workspace %s: %s", o.workspace, strerror(errno));
        return WORKER_EXIT_USAGE;
    }

    struct sandbox_policy policy;
    struct sandbox_report report;
    int rc;
    sandbox_policy_init(&policy);
    policy.enabled = o.sandbox;
    policy.network = o.network;
    policy.workspace = o.workspace;
    policy.tmpdir = o.tmpdir;
    /* The user's folder of private folders, which the supervisor made the
     * temporary folder in (tmpdir.h): hidden but for that folder. */
    char private_root[PATH_MAX], parent[PATH_MAX], expected[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", o.tmpdir);
    snprintf(private_root, sizeof private_root, "%s", dirname(parent));
    snprintf(parent, sizeof parent, "%s", private_root);
    if (sandbox_private_root(dirname(parent), expected, sizeof expected) == 0 &&
        strcmp(expected, private_root) == 0)
        policy.private_root = private_root;
    char why[512];
    char **ro_paths = read_only_paths(&o, &policy, why, sizeof why);
    if (!ro_paths) {
        log_error("cannot confine the worker: %s", why);
        return WORKER_EXIT_SANDBOX;
    }
    if (o.sandbox && !connection_file_in_place(&o)) {
        log_error("cannot confine the worker: the connection file %s is no longer the "
                  "one the kernel started with, and its key may lie elsewhere in the "
                  "workspace",
                  o.hide);
        return WORKER_EXIT_SANDBOX;
    }
    policy.ro_paths = (const char *const *)ro_paths;
    /* The connection file holds the key: unreadable even inside the workspace; so
     * are the user's secrets, and the user's setup is never written (home.h). */
    extern char **environ;
    struct sandbox_masks masks;
    rc = sandbox_masks_build(&masks, &policy, environ, o.sandbox);
    if (rc != 0) {
        log_error("cannot confine the worker: %s",
                  masks.why[0] ? masks.why : "out of memory building the sandbox policy");
        return WORKER_EXIT_SANDBOX;
    }
    if (masks.scan_cut)
        log_warn("the workspace has too many entries near its top: connection files of "
                 "other kernels beyond the first 65536 are not looked for");
    for (size_t i = 0; masks.made && masks.made[i]; i++)
        log_info("made %s (empty), so that the code cannot make it", masks.made[i]);
    size_t n_hidden = 0;
    while (masks.hidden && masks.hidden[n_hidden])
        n_hidden++;
    const char **hidden = calloc(n_hidden + 4, sizeof *hidden);
    if (!hidden) {
        log_error("out of memory building the sandbox policy");
        return WORKER_EXIT_SANDBOX;
    }
    size_t k = 0;
    if (o.hide)
        hidden[k++] = o.hide;
    k = hide_history(hidden, k, o.history, &policy);
    for (size_t i = 0; i < n_hidden; i++)
        hidden[k++] = masks.hidden[i];
    /* The other places a kernel of this user keeps its private folders (one
     * started with another TMPDIR), which the supervisor makes before any
     * worker starts, so that no cell can make one first: covered too. */
    char other_roots[2][PATH_MAX];
    int n_other = 0;
    if (sandbox_private_root("/tmp", other_roots[n_other], PATH_MAX) == 0)
        n_other++;
    if (sandbox_private_root(getenv("XDG_RUNTIME_DIR"), other_roots[n_other], PATH_MAX) ==
        0)
        n_other++;
    for (int i = 0; i < n_other; i++)
        if (!policy.private_root || strcmp(other_roots[i], policy.private_root) != 0)
            hidden[k++] = other_roots[i];
    policy.hidden_paths = hidden;
    policy.readonly_paths = (const char *const *)masks.readonly;
    policy.home_dirs = (const char *const *)masks.homes;
    for (size_t i = 0; masks.skipped && masks.skipped[i]; i++)
        log_warn("%s holds the workspace: it is not masked", masks.skipped[i]);
    policy.memory_bytes = (uint64_t)o.memory_mib << 20;
    policy.max_file_bytes = (uint64_t)o.max_file_mib << 20;
    policy.cpus = o.cpus;
    policy.cgroup_note = cgroup_note;
    policy.trial = &trial;
    memset(&report, 0, sizeof report);
    stopwatch_step(&watch, "options and masks");
    rc = sandbox_enter(&policy, &report);
    if (rc) {
        log_error("cannot confine the worker: %s", strerror(-rc));
        return WORKER_EXIT_SANDBOX;
    }
    stopwatch_step(&watch, "confined (rlimits, namespaces, Landlock)");

    bool later = import_user_code(&o, &policy, pythonpath, false);
    if (o.preload)
        stopwatch_step(&watch, "preloads");
    if ((rc = pump_start(o.max_output)) != 0) {
        log_error("cannot capture the output: %s", strerror(-rc));
        return WORKER_EXIT_OUTPUT;
    }
    pyrt_before_lock();
    stopwatch_step(&watch, "output pump and the user's namespace");
    rc = sandbox_lock(&policy, &report);
    if (rc) {
        log_error("cannot lock the sandbox: %s", strerror(-rc));
        return WORKER_EXIT_SANDBOX;
    }
    stopwatch_step(&watch, "locked (seccomp)");
    if (later) {
        import_user_code(&o, &policy, pythonpath, true);
        stopwatch_step(&watch, "the workspace's paths and preloads, under seccomp");
    }
    free(pythonpath);
    enter_start_folder(o.workspace);
    if (template) {
        pyrt_warm();
        stopwatch_step(&watch,
                       "warmed up (a first cell's copies of the template's pages)");
    }
    /* Start-up is over: the arenas' pages it did not write go back (arenas.h). A
     * worker forked from the template finds this done there. */
    if (arenas_populating()) {
        size_t back = arenas_settle();
        log_debug("start-up: %zu kB of Python's arenas left unwritten, given back",
                  back >> 10);
    }
    log_debug("start-up: the loader's pages given back: %zu kB",
              loadpages_release() >> 10);
    for (size_t i = 0; i < report.n; i++)
        log_info("sandbox layer %s: %s%s%s", report.layers[i].name,
                 sandbox_state_name(report.layers[i].state),
                 report.layers[i].detail[0] ? ", " : "", report.layers[i].detail);
    /* Cells run from here on, and could write to any descriptor the worker holds:
     * the log pipe is closed, and the log goes over the link (to_link). */
    log_set_sink(to_link);
    if (logfd >= 0)
        close(logfd);
    char *hello = hello_json(&report);
    rc = pyrt_serve(hello);
    free(hello);
    free(hidden);
    free_paths(ro_paths);
    sandbox_masks_release(&masks);
    options_release(&o);
    return rc;
}
