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
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

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
#include "kernel/worker/worker_policy.h"
#include "sandbox/home.h"
#include "sandbox/sandbox.h"
#include "sandbox/tfile.h"

static void set_environment(const struct options *o)
{
    char path[4096];
    setenv("TMPDIR", o->tmpdir, 1);
    /* The options the Python runtime needs, which sandpit/options.py alone reads
     * (tests/runtime/test_options.py holds the two sides together): what
     * sandpit/guard.py explains when it refuses something, ... */
    setenv("SANDPIT_SANDBOX", o->sandbox ? "on" : "off", 1);
    setenv("SANDPIT_NETWORK", o->network ? "on" : "off", 1);
    setenv("SANDPIT_WORKSPACE", o->workspace, 1);
    char limit[32];
    snprintf(limit, sizeof limit, "%lu", o->memory_mib);
    setenv("SANDPIT_MEMORY_MIB", limit, 1);
    snprintf(limit, sizeof limit, "%lu", o->max_file_mib);
    setenv("SANDPIT_MAX_FILE_MIB", limit, 1);
    /* ... the options of the inline charts (sandpit/figures.py) ... */
    if (o->figure_format)
        setenv("SANDPIT_FIGURE_FORMAT", o->figure_format, 1);
    if (o->dpi) {
        char dpi[16];
        snprintf(dpi, sizeof dpi, "%d", o->dpi);
        setenv("SANDPIT_DPI", dpi, 1);
    }
    /* ... and --seed (sandpit/seeding.py, in each new worker). */
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

/* What worker_main's steps share, from its start to its first cell. */
struct start {
    struct options o;
    struct stopwatch watch;
    bool template; /* started as the worker template */
    int logfd;     /* the supervisor's stderr, where the log goes until cells run */
    struct sandbox_trial trial;
    char *pythonpath; /* PYTHONPATH, kept out of Python's start (new) */
    char cgroup_note[SANDBOX_DETAIL_MAX]; /* what the supervisor made of the cgroup */
};

/* CPython started and the runtime imported, reading nothing the user's code can
 * write; the namespaces are tried beside it, not after it (sandbox.h). 0, or the
 * status to exit with. */
static int start_python(struct start *st)
{
    char err[512];
    const struct options *o = &st->o;
    if (o->sandbox)
        sandbox_trial_start(&st->trial, o->network);
    set_environment(o);
    /* PYTHONPATH may name folders the user's code can write: Python starts
     * without it, and each worker adds it once it is confined. */
    st->pythonpath = getenv("PYTHONPATH") ? strdup(getenv("PYTHONPATH")) : NULL;
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
    stopwatch_step(&st->watch, "Python and the runtime");
    return 0;
}

/* The template serves here until the supervisor has gone (and then exits); each
 * worker it forks, and a worker started alone, goes on with what the supervisor
 * made of its cgroup in st->cgroup_note. */
static void become_worker(struct start *st)
{
    if (st->template) {
        sandbox_trial_finish(&st->trial); /* its answer goes to each worker forked */
        int rc = spawner_serve(3, st->logfd, st->cgroup_note, sizeof st->cgroup_note);
        if (rc != 1) {
            if (rc < 0)
                log_error("the worker template stops: %s", strerror(-rc));
            fflush(NULL);
            _exit(rc == 0 ? WORKER_EXIT_OK : WORKER_EXIT_FAILED);
        }
        /* From here on, a worker forked from the template. */
        log_init("worker", st->o.log_level, st->logfd);
        st->watch.start = st->watch.last = monotime_now();
        st->watch.faults = page_faults();
        stopwatch_step(&st->watch, "forked from the template");
    } else {
        prctl(PR_SET_NAME, "sandpit-worker"); /* rather than "exe" */
        const char *note = getenv("SANDPIT_CGROUP");
        snprintf(st->cgroup_note, sizeof st->cgroup_note, "%s", note ? note : "");
    }
    unsetenv("SANDPIT_CGROUP");
    if (st->pythonpath)
        setenv("PYTHONPATH", st->pythonpath, 1);
}

/* Stage 1 of the sandbox, the user's code that may run before the filter, the
 * output pump, stage 2 (seccomp), then the user's code that must not run before
 * it. 0, or the status to exit with. */
static int confine(struct start *st, const struct sandbox_policy *policy,
                   struct sandbox_report *report)
{
    const struct options *o = &st->o;
    int rc = sandbox_enter(policy, report);
    if (rc) {
        log_error("cannot confine the worker: %s", strerror(-rc));
        return WORKER_EXIT_SANDBOX;
    }
    stopwatch_step(&st->watch, "confined (rlimits, namespaces, Landlock)");

    bool later = import_user_code(o, policy, st->pythonpath, false);
    if (o->preload)
        stopwatch_step(&st->watch, "preloads");
    if ((rc = pump_start(o->max_output)) != 0) {
        log_error("cannot capture the output: %s", strerror(-rc));
        return WORKER_EXIT_OUTPUT;
    }
    pyrt_before_lock();
    stopwatch_step(&st->watch, "output pump and the user's namespace");
    rc = sandbox_lock(policy, report);
    if (rc) {
        log_error("cannot lock the sandbox: %s", strerror(-rc));
        return WORKER_EXIT_SANDBOX;
    }
    stopwatch_step(&st->watch, "locked (seccomp)");
    if (later) {
        import_user_code(o, policy, st->pythonpath, true);
        stopwatch_step(&st->watch, "the workspace's paths and preloads, under seccomp");
    }
    return 0;
}

/* Start-up is over: what it alone needed goes back, the report is logged, the log
 * moves to the link, and the worker says hello and serves until the link closes.
 * The status to exit with. */
static int serve(struct start *st, const struct sandbox_report *report)
{
    enter_start_folder(st->o.workspace);
    if (st->template) {
        pyrt_warm();
        stopwatch_step(&st->watch,
                       "warmed up (a first cell's copies of the template's pages)");
    }
    /* The arenas' pages start-up did not write go back (arenas.h). A worker forked
     * from the template finds this done there. */
    if (arenas_populating()) {
        size_t back = arenas_settle();
        log_debug("start-up: %zu kB of Python's arenas left unwritten, given back",
                  back >> 10);
    }
    log_debug("start-up: the loader's pages given back: %zu kB",
              loadpages_release() >> 10);
    for (size_t i = 0; i < report->n; i++)
        log_info("sandbox layer %s: %s%s%s", report->layers[i].name,
                 sandbox_state_name(report->layers[i].state),
                 report->layers[i].detail[0] ? ", " : "", report->layers[i].detail);
    /* Cells run from here on, and could write to any descriptor the worker holds:
     * the log pipe is closed, and the log goes over the link (to_link). */
    log_set_sink(to_link);
    if (st->logfd >= 0)
        close(st->logfd);
    char *hello = hello_json(report);
    int rc = pyrt_serve(hello);
    free(hello);
    return rc;
}

int worker_main(int argc, char **argv)
{
    struct start st = {.logfd = -1};
    st.watch.start = st.watch.last = monotime_now();
    st.trial = (struct sandbox_trial){.flags = 0, .fd = -1, .done = true};
    options_init(&st.o);
    char err[512];
    st.template = take_template_flag(&argc, argv);
    const char *name = st.template ? "template" : "worker";
    /* The log keeps the supervisor's stderr; fd 2 itself will become a pipe. */
    st.logfd = fcntl(2, F_DUPFD_CLOEXEC, 10);
    log_init(name, LOG_WARN, st.logfd >= 0 ? st.logfd : 2);
    if (options_parse(&st.o, argc, argv, err, sizeof err) || !st.o.workspace ||
        !st.o.tmpdir) {
        log_error("bad worker command line: %s", st.o.workspace ? err : "no workspace");
        return WORKER_EXIT_USAGE;
    }
    log_init(name, st.o.log_level, st.logfd >= 0 ? st.logfd : 2);
    int rc = start_python(&st);
    if (rc)
        return rc;
    become_worker(&st);
    uplink_init();
    uplink_set_frame_limit(
        link_worker_frame_limit(st.o.max_output, options_max_images(&st.o)));
    if (chdir(st.o.workspace) != 0) {
        log_error("cannot enter the workspace %s: %s", st.o.workspace, strerror(errno));
        return WORKER_EXIT_USAGE;
    }
    struct worker_policy wp;
    struct sandbox_report report;
    if (worker_policy_build(&wp, &st.o, st.cgroup_note, &st.trial) < 0)
        return WORKER_EXIT_SANDBOX;
    memset(&report, 0, sizeof report);
    stopwatch_step(&st.watch, "options and masks");
    if ((rc = confine(&st, &wp.policy, &report)) != 0)
        return rc;
    free(st.pythonpath);
    rc = serve(&st, &report);
    worker_policy_release(&wp);
    options_release(&st.o);
    return rc;
}
