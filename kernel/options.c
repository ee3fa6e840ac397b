/* options: parse and re-emit the kernel's settings.
 *
 * One table describes each option once, so that what `sandpit kernel` accepts,
 * what `sandpit install` writes and what the worker is given cannot drift
 * apart. */
#include "kernel/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/util/flags.h"
#include "protocol/errbuf.h"

/* OPT_LIST: an option that may be given more than once, each value kept. */
enum opt_kind {
    OPT_STRING,
    OPT_DOUBLE,
    OPT_ULONG,
    OPT_INT,
    OPT_ONOFF,
    OPT_LOGLEVEL,
    OPT_LIST
};

struct opt {
    const char *name; /* long name without "--" */
    enum opt_kind kind;
    size_t offset;
    const char *help;
};

#define OFF(f) offsetof(struct options, f)

static const struct opt table[] = {
    {"workspace", OPT_STRING, OFF(workspace),
     "DIR    folder the code may read and write (default: where the kernel starts)"},
    {"timeout", OPT_DOUBLE, OFF(timeout_s),
     "S      wall-clock limit per cell (and comm message) in seconds; 0: none"},
    {"memory", OPT_ULONG, OFF(memory_mib),
     "MIB    memory limit of the worker in MiB; 0: none"},
    {"max-output", OPT_ULONG, OFF(max_output),
     "BYTES  text a cell may send (streams, displays and results but their images); 0: "
     "none"},
    {"max-image-output", OPT_ULONG, OFF(max_images),
     "BYTES  images a cell may send (default 16 MiB where --max-output is set, else "
     "none); 0: none"},
    {"idle-timeout", OPT_DOUBLE, OFF(idle_timeout_s),
     "S      the kernel shuts down after S seconds with no request and no cell "
     "running; 0: never"},
    {"introspection-timeout", OPT_DOUBLE, OFF(introspection_s),
     "S      time limit of completion and inspection in seconds (default 5); 0: none"},
    {"max-file", OPT_ULONG, OFF(max_file_mib),
     "MIB    largest file a cell may write; 0: none"},
    {"max-message", OPT_ULONG, OFF(max_message_mib),
     "MIB    largest message a client may send, its frames together (default 32); 0: "
     "none"},
    {"cpus", OPT_DOUBLE, OFF(cpus),
     "N      CPU time the worker may use, in CPUs (0.5: half of one); 0: no limit"},
    {"network", OPT_ONOFF, OFF(network),
     "on|off network access for the code (default off)"},
    {"sandbox", OPT_ONOFF, OFF(sandbox), "on|off confine the worker (default on)"},
    {"active-output", OPT_ONOFF, OFF(active_output),
     "on|off let outputs run in the notebook's page (JavaScript, scripts and event "
     "handlers in HTML, SVG and Markdown); off: made inert (default off)"},
    {"template", OPT_ONOFF, OFF(template),
     "on|off fork each new worker from a template that has started Python, for fast "
     "restarts (default on)"},
    {"figure-format", OPT_STRING, OFF(figure_format),
     "png|retina|svg  inline chart format"},
    {"dpi", OPT_INT, OFF(dpi), "N      resolution of inline charts"},
    {"preload", OPT_STRING, OFF(preload),
     "MODS   comma-separated modules to import before the sandbox locks"},
    {"log-level", OPT_LOGLEVEL, OFF(log_level), "LEVEL  error, warning, info or debug"},
    {"pass-env", OPT_STRING, OFF(pass_env),
     "NAMES  comma-separated environment variables the code may see (with the sandbox "
     "on, "
     "only a short list of harmless ones is passed)"},
    {"seed", OPT_STRING, OFF(seed),
     "N      seed random (and numpy.random) in each new worker, so reruns repeat"},
    {"history", OPT_STRING, OFF(history),
     "PATH|off  the history's database (default: sandpit/history.sqlite in the Jupyter "
     "data folder); off: kept in memory, for this kernel alone"},
    {"venv", OPT_STRING, OFF(venv),
     "DIR    a virtual environment whose packages the code may import (read-only)"},
    {"read", OPT_LIST, OFF(read_dirs),
     "DIR    a folder the code may read but not write; may be given more than once"},
    {"tmpdir", OPT_STRING, OFF(tmpdir), NULL},   /* internal: supervisor to worker */
    {"hide", OPT_STRING, OFF(hide), NULL},       /* internal: supervisor to worker */
    {"hide-id", OPT_STRING, OFF(hide_id), NULL}, /* internal: its device:inode */
};

#define NOPTS (sizeof table / sizeof table[0])

void options_init(struct options *o)
{
    memset(o, 0, sizeof *o);
    o->log_level = LOG_WARN;
    o->sandbox = true;
    o->template = true;
    o->network = false;
    o->dpi = 0;
    o->max_message_mib = OPTIONS_DEFAULT_MAX_MESSAGE_MIB;
    o->max_images = OPTIONS_IMAGES_DEFAULT;
    o->introspection_s = OPTIONS_DEFAULT_INTROSPECTION_S;
}

unsigned long options_max_images(const struct options *o)
{
    if (o->max_images != OPTIONS_IMAGES_DEFAULT)
        return o->max_images;
    return o->max_output ? OPTIONS_DEFAULT_MAX_IMAGES : 0;
}

void options_release(struct options *o)
{
    free(o->connection_file);
    free(o->workspace);
    free(o->figure_format);
    free(o->preload);
    free(o->tmpdir);
    free(o->hide);
    free(o->hide_id);
    free(o->pass_env);
    free(o->seed);
    free(o->history);
    free(o->venv);
    for (size_t i = 0; i < o->read_dirs.n; i++)
        free(o->read_dirs.v[i]);
    free(o->read_dirs.v);
    options_init(o);
}

static int set_value(struct options *o, const struct opt *d, const char *v, char *err,
                     size_t errlen)
{
    void *field = (char *)o + d->offset;
    char *end = NULL;
    errno = 0;
    switch (d->kind) {
    case OPT_STRING: {
        char **s = field;
        free(*s);
        *s = strdup(v);
        return *s ? 0 : -ENOMEM;
    }
    case OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(x) || x < 0)
            return errbuf_set(
                -EINVAL, err, errlen, "--%s needs a number%s, not \"%s\"", d->name,
                d->offset == OFF(timeout_s) || d->offset == OFF(introspection_s) ||
                        d->offset == OFF(idle_timeout_s)
                    ? " of seconds"
                    : "",
                v);
        *(double *)field = x;
        return 0;
    }
    case OPT_ULONG: {
        unsigned long x = strtoul(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-')
            return errbuf_set(-EINVAL, err, errlen,
                              "--%s needs a whole number, not \"%s\"", d->name, v);
        *(unsigned long *)field = x;
        return 0;
    }
    case OPT_INT: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < 0 || x > INT_MAX)
            return errbuf_set(-EINVAL, err, errlen,
                              "--%s needs a whole number, not \"%s\"", d->name, v);
        *(int *)field = (int)x;
        return 0;
    }
    case OPT_ONOFF:
        if (strcmp(v, "on") == 0)
            *(bool *)field = true;
        else if (strcmp(v, "off") == 0)
            *(bool *)field = false;
        else
            return errbuf_set(-EINVAL, err, errlen, "--%s takes on or off, not \"%s\"",
                              d->name, v);
        return 0;
    case OPT_LIST: {
        struct options_list *l = field;
        char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        l->v = nv;
        if (!(nv[l->n] = strdup(v)))
            return -ENOMEM;
        l->n++;
        return 0;
    }
    case OPT_LOGLEVEL:
        if (log_parse_level(v, field))
            return errbuf_set(
                -EINVAL, err, errlen,
                "--log-level takes error, warning, info or debug, not \"%s\"", v);
        return 0;
    }
    return -EINVAL;
}

static int set_option(void *base, const struct flag *f, const char *v, char *err,
                      size_t errlen)
{
    return set_value(base, f->data, v, err, errlen);
}

static int set_connection_file(void *base, const struct flag *f, const char *v, char *err,
                               size_t errlen)
{
    struct options *o = base;
    (void)f, (void)err, (void)errlen;
    free(o->connection_file);
    return (o->connection_file = strdup(v)) ? 0 : -ENOMEM;
}

int options_parse(struct options *o, int argc, char **argv, char *err, size_t errlen)
{
    struct flag v[NOPTS + 1];
    v[0] = (struct flag){.name = "connection-file",
                         .letter = 'f',
                         .kind = FLAG_CALL,
                         .needs = "the path of a connection file",
                         .call = set_connection_file};
    for (size_t k = 0; k < NOPTS; k++)
        v[k + 1] = (struct flag){.name = table[k].name,
                                 .kind = FLAG_CALL,
                                 .needs = "a value",
                                 .call = set_option,
                                 .data = &table[k]};
    const struct flags fl = {"sandpit", v, NOPTS + 1, false};
    return flags_parse(&fl, o, &argc, argv, err, errlen);
}

int options_apply_profile(struct options *o, const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "agent") == 0) {
        /* Tuned for agents: short cells, short output, bounded memory, no network. */
        o->timeout_s = 30;
        o->idle_timeout_s = 3600; /* a kernel its agent forgot goes in an hour */
        /* What reaches `sandpit run` and `mcp`, which keep the beginning and
         * the end of each stream within their --max-chars. */
        o->max_output = 1000000;
        o->memory_mib = 2048;
        o->network = false;
        return 0;
    }
    if (strcmp(name, "default") == 0)
        return 0;
    return errbuf_set(-EINVAL, err, errlen, "unknown profile \"%s\" (default, agent)",
                      name);
}

int options_check(const struct options *o, char *err, size_t errlen)
{
    if (o->seed) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(o->seed, &end, 10);
        if (!*o->seed || *end || errno || o->seed[0] == '-' || v > 0xffffffffULL)
            return errbuf_set(-EINVAL, err, errlen,
                              "--seed needs a whole number from 0 to 4294967295, not "
                              "\"%s\"",
                              o->seed);
    }
    if (o->figure_format && strcmp(o->figure_format, "png") != 0 &&
        strcmp(o->figure_format, "retina") != 0 && strcmp(o->figure_format, "svg") != 0)
        return errbuf_set(-EINVAL, err, errlen,
                          "--figure-format takes png, retina or svg, not \"%s\"",
                          o->figure_format);
    if (o->timeout_s > 0 && o->timeout_s < 0.01)
        return errbuf_set(-EINVAL, err, errlen,
                          "--timeout must be 0 (none) or at least 0.01 s");
    if (o->introspection_s > 0 && o->introspection_s < 0.01)
        return errbuf_set(-EINVAL, err, errlen,
                          "--introspection-timeout must be 0 (none) or at least 0.01 s");
    if (o->memory_mib && o->memory_mib < 64)
        return errbuf_set(-EINVAL, err, errlen,
                          "--memory must be 0 (none) or at least 64 MiB");
    if (o->cpus > 0 && (o->cpus < 0.01 || o->cpus > 4096))
        return errbuf_set(-EINVAL, err, errlen,
                          "--cpus must be 0 (no limit) or between 0.01 and 4096");
    if (o->dpi && (o->dpi < 10 || o->dpi > 1200))
        return errbuf_set(-EINVAL, err, errlen, "--dpi must be between 10 and 1200");
    if (o->history && !*o->history)
        return errbuf_set(-EINVAL, err, errlen,
                          "--history needs the path of a database, or off");
    return 0;
}

char *options_venv_site_packages(const struct options *o)
{
    char path[PATH_MAX];
    if (!o->venv || snprintf(path, sizeof path, "%s/lib/python%s/site-packages", o->venv,
                             SANDPIT_PY_SHORT) >= (int)sizeof path)
        return NULL;
    return strdup(path);
}

/* *path made real and absolute, checked to be a folder; what names it (--read)
 * goes into the sentence. */
static int resolve_dir(char **path, const char *what, char *err, size_t errlen)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(*path, real))
        return errbuf_set(-errno, err, errlen, "%s %s cannot be used: %s", what, *path,
                          strerror(errno));
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
        return errbuf_set(-ENOTDIR, err, errlen, "%s %s is not a folder", what, *path);
    char *copy = strdup(real);
    if (!copy)
        return -ENOMEM;
    free(*path);
    *path = copy;
    return 0;
}

/* --venv: a folder with the site-packages of this Python. */
static int check_venv(const struct options *o, char *err, size_t errlen)
{
    char *site = options_venv_site_packages(o);
    struct stat st;
    int rc = 0;
    if (!site || stat(site, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = errbuf_set(-ENOENT, err, errlen,
                        "--venv %s has no lib/python%s/site-packages: give a virtual "
                        "environment made with this Python (%s -m venv DIR)",
                        o->venv, SANDPIT_PY_SHORT, SANDPIT_PYTHON);
    free(site);
    return rc;
}

/* A relative --history is the folder's where the command was given, not the
 * notebook's where a kernel will start. */
static int absolute_history(struct options *o)
{
    char cwd[PATH_MAX], *abs = NULL;
    if (!o->history || strcmp(o->history, "off") == 0 || o->history[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof cwd))
        return -errno;
    if (asprintf(&abs, "%s/%s", cwd, o->history) < 0)
        return -ENOMEM;
    free(o->history);
    o->history = abs;
    return 0;
}

int options_resolve_paths(struct options *o, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < o->read_dirs.n && !rc; i++)
        rc = resolve_dir(&o->read_dirs.v[i], "--read", err, errlen);
    if (!rc && o->venv && !(rc = resolve_dir(&o->venv, "--venv", err, errlen)))
        rc = check_venv(o, err, errlen);
    if (!rc && (rc = absolute_history(o)))
        errbuf_set(rc, err, errlen, "--history %s cannot be made absolute", o->history);
    return rc;
}

static int push(char ***argv, int argc, const char *s)
{
    char **na = realloc(*argv, (size_t)(argc + 2) * sizeof *na);
    if (!na)
        return -ENOMEM;
    *argv = na;
    if (!(na[argc] = strdup(s)))
        return -ENOMEM;
    na[argc + 1] = NULL;
    return argc + 1;
}

int options_to_argv(const struct options *o, char ***argv, int argc)
{
    struct options dflt;
    options_init(&dflt);
    for (size_t k = 0; k < NOPTS; k++) {
        const struct opt *d = &table[k];
        const void *f = (const char *)o + d->offset, *g = (const char *)&dflt + d->offset;
        char val[64];
        const char *v = val;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", d->name);
        switch (d->kind) {
        case OPT_LIST: {
            const struct options_list *l = f;
            for (size_t i = 0; i < l->n; i++)
                if ((argc = push(argv, argc, flag)) < 0 ||
                    (argc = push(argv, argc, l->v[i])) < 0)
                    return -ENOMEM;
            continue;
        }
        case OPT_STRING:
            v = *(char *const *)f;
            if (!v)
                continue;
            break;
        case OPT_DOUBLE:
            if (*(const double *)f == *(const double *)g)
                continue;
            snprintf(val, sizeof val, "%g", *(const double *)f);
            break;
        case OPT_ULONG:
            if (*(const unsigned long *)f == *(const unsigned long *)g)
                continue;
            snprintf(val, sizeof val, "%lu", *(const unsigned long *)f);
            break;
        case OPT_INT:
            if (*(const int *)f == *(const int *)g)
                continue;
            snprintf(val, sizeof val, "%d", *(const int *)f);
            break;
        case OPT_ONOFF:
            if (*(const bool *)f == *(const bool *)g)
                continue;
            v = *(const bool *)f ? "on" : "off";
            break;
        case OPT_LOGLEVEL:
            if (*(const enum log_level *)f == *(const enum log_level *)g)
                continue;
            v = log_level_name(*(const enum log_level *)f);
            break;
        }
        if ((argc = push(argv, argc, flag)) < 0 || (argc = push(argv, argc, v)) < 0)
            return -ENOMEM;
    }
    return argc;
}

void options_usage(FILE *f)
{
    for (size_t k = 0; k < NOPTS; k++)
        if (table[k].help)
            fprintf(f, "  --%-21s %s\n", table[k].name, table[k].help);
}
