/* options: the kernel's settings, from its command line (kernel.json argv).
 * Parsed once in the supervisor; the worker gets the ones it needs on its own
 * command line; `sandpit install` writes them into a kernelspec. Strings are
 * owned by the struct. */
#ifndef SANDPIT_OPTIONS_H
#define SANDPIT_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "kernel/util/log.h"

/* Above what a notebook sends (a cell of a few MB is a large one; a browser's
 * messages, a widget's state or a file on an upload widget, pass Jupyter
 * Server's WebSocket, which takes 10 MiB), and what a client without the key
 * can make the supervisor hold, twice per connection (README). */
#define OPTIONS_DEFAULT_MAX_MESSAGE_MIB 32
/* Completion and inspection run the user's code (__dir__, __repr__, properties): they
 * get a short time limit of their own, whatever --timeout is. */
#define OPTIONS_DEFAULT_INTROSPECTION_S 5.0
/* Where --max-output caps a cell's text, its images have a larger budget of their
 * own (a chart is 20 to 100 kB), unless --max-image-output says otherwise. */
#define OPTIONS_DEFAULT_MAX_IMAGES (16ul << 20)
#define OPTIONS_IMAGES_DEFAULT     ((unsigned long)-1) /* --max-image-output not given */

/* The values of an option that may be given more than once (--read). */
struct options_list {
    char **v; /* owned, with their strings */
    size_t n;
};

struct options {
    char *connection_file; /* -f */
    enum log_level log_level;
    char *workspace;          /* NULL: the directory the kernel was started in */
    double timeout_s;         /* per-cell wall-clock limit; 0: none */
    double idle_timeout_s;    /* shut down after this long with no request; 0: never */
    unsigned long memory_mib; /* 0: none */
    unsigned long max_output; /* bytes of text output per cell; 0: none */
    unsigned long
        max_images; /* bytes of images per cell; 0: none; see options_max_images */
    double introspection_s;     /* limit of completion and inspection; 0: none */
    unsigned long max_file_mib; /* largest file a cell may write; 0: none */
    bool network;
    bool sandbox;
    bool template;      /* workers forked from a worker template (worker_lifecycle.c) */
    bool active_output; /* outputs published as they are, scripts and all */

    unsigned long max_message_mib; /* largest message from a client; 0: none */
    double cpus;                   /* CPU time of the worker, in CPUs; 0: no limit */

    char *figure_format; /* "png", "retina" or "svg" */
    int dpi;
    char *preload;  /* comma-separated modules imported before lock-in */
    char *pass_env; /* comma-separated environment variables the code may see */
    char *seed;     /* seeds random (and numpy.random) in each new worker; NULL: none */
    char *history;  /* the history's database, or "off"; NULL: the user's default */
    char *venv;     /* a virtual environment the code imports from, read-only */
    struct options_list read_dirs; /* --read: folders the code may read */
    char *tmpdir;                  /* internal: the worker's private temporary folder */
    char *hide;    /* internal: a file the worker must not read (the key's) */
    char *hide_id; /* internal: "device:inode" of hide when the supervisor started */
};

void options_init(struct options *o);
void options_release(struct options *o);

/* Parses the options that follow a subcommand (argv[0] is the subcommand).
 * An unknown option or a stray argument is an error. Returns 0, or -EINVAL
 * (-ENOMEM) with a sentence in err. */
int options_parse(struct options *o, int argc, char **argv, char *err, size_t errlen);

/* Applies a named set of defaults ("default", "agent") before the options
 * given after it are parsed. 0 or -EINVAL with a sentence in err. */
int options_apply_profile(struct options *o, const char *name, char *err, size_t errlen);

/* The image budget per cell in force: --max-image-output if given, else
 * OPTIONS_DEFAULT_MAX_IMAGES where --max-output is set, else none (0). */
unsigned long options_max_images(const struct options *o);

/* Checks that the values make sense together. 0 or -EINVAL with err. */
int options_check(const struct options *o, char *err, size_t errlen);

/* Makes the folders of --venv and --read absolute (real paths), as the worker
 * and a kernelspec need them, checking that each is a folder (--venv one with
 * the site-packages of this Python). 0, or -errno with a sentence in err. */
int options_resolve_paths(struct options *o, char *err, size_t errlen);

/* The site-packages folder of --venv (new string, caller frees), or NULL. */
char *options_venv_site_packages(const struct options *o);

/* Appends the options that differ from the defaults to argv as strings
 * ("--timeout", "30", ...): what `sandpit install` writes into kernel.json and
 * the supervisor passes to the worker. Each string is new (caller frees them
 * with the array). Returns the new count, or -ENOMEM. */
int options_to_argv(const struct options *o, char ***argv, int argc);

/* The help text for the options, in British English. */
void options_usage(FILE *f);

#endif
